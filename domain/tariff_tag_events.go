package domain

// Tariff tag event type names.
const (
	TariffTagCreatedType = "TariffTagCreated.v1"
	TariffTagUpdatedType = "TariffTagUpdated.v1"
	TariffTagDeletedType = "TariffTagDeleted.v1"
)

// TariffTagCreated records a new tariff tag of a provider.
type TariffTagCreated struct {
	TagID    int64  `json:"tag_id"`
	Provider int64  `json:"provider"`
	Name     string `json:"name"`
	Enabled  bool   `json:"enabled"`
	Position int    `json:"position"`
}

// TariffTagUpdated carries the tag fields that changed; none is ever Null.
type TariffTagUpdated struct {
	TagID    int64            `json:"tag_id"`
	Name     Optional[string] `json:"name,omitzero"`
	Enabled  Optional[bool]   `json:"enabled,omitzero"`
	Position Optional[int]    `json:"position,omitzero"`
}

// TariffTagDeleted records that a tag was deleted. Its id is never reused.
type TariffTagDeleted struct {
	TagID int64 `json:"tag_id"`
}

// EventType implements Event.
func (TariffTagCreated) EventType() string { return TariffTagCreatedType }

// EventType implements Event.
func (TariffTagUpdated) EventType() string { return TariffTagUpdatedType }

// EventType implements Event.
func (TariffTagDeleted) EventType() string { return TariffTagDeletedType }

func registerTariffTagEvents(r *Registry) {
	r.Register(TariffTagCreatedType, func() Event { return new(TariffTagCreated) })
	r.Register(TariffTagUpdatedType, func() Event { return new(TariffTagUpdated) })
	r.Register(TariffTagDeletedType, func() Event { return new(TariffTagDeleted) })
}
