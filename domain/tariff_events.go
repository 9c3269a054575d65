package domain

// Tariff event type names.
const (
	TariffCreatedType = "TariffCreated.v1"
	TariffUpdatedType = "TariffUpdated.v1"
	TariffDeletedType = "TariffDeleted.v1"
)

// TariffCreated records a new tariff of a provider. Channels is never nil
// and holds no repeats.
type TariffCreated struct {
	TariffID    int64   `json:"tariff_id"`
	Provider    int64   `json:"provider"`
	Name        string  `json:"name"`
	Enabled     bool    `json:"enabled"`
	Channels    []int64 `json:"channels"`
	Description string  `json:"description,omitempty"`
	Tag         *int64  `json:"tag,omitempty"`
}

// TariffUpdated carries the tariff fields that changed. Only Tag may be
// Null (no tag); a null description or channel list is stored as empty.
type TariffUpdated struct {
	TariffID    int64             `json:"tariff_id"`
	Name        Optional[string]  `json:"name,omitzero"`
	Enabled     Optional[bool]    `json:"enabled,omitzero"`
	Channels    Optional[[]int64] `json:"channels,omitzero"`
	Description Optional[string]  `json:"description,omitzero"`
	Tag         Optional[int64]   `json:"tag,omitzero"`
}

// TariffDeleted records that a tariff was deleted. Its id is never reused.
type TariffDeleted struct {
	TariffID int64 `json:"tariff_id"`
}

// EventType implements Event.
func (TariffCreated) EventType() string { return TariffCreatedType }

// EventType implements Event.
func (TariffUpdated) EventType() string { return TariffUpdatedType }

// EventType implements Event.
func (TariffDeleted) EventType() string { return TariffDeletedType }

func registerTariffEvents(r *Registry) {
	r.Register(TariffCreatedType, func() Event { return new(TariffCreated) })
	r.Register(TariffUpdatedType, func() Event { return new(TariffUpdated) })
	r.Register(TariffDeletedType, func() Event { return new(TariffDeleted) })
}
