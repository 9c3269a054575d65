package domain

// Provider event type names.
const (
	ProviderCreatedType = "ProviderCreated.v1"
	ProviderUpdatedType = "ProviderUpdated.v1"
	ProviderDeletedType = "ProviderDeleted.v1"
)

// ProviderCreated records a new provider. BillingToken is the shared secret
// that signs billing calls: it is stored in the log because state is rebuilt
// from it, and views never show it.
type ProviderCreated struct {
	ProviderID             int64  `json:"provider_id"`
	Name                   string `json:"name"`
	Enabled                bool   `json:"enabled"`
	DevicesPerAccountLimit *int   `json:"devices_per_account_limit,omitempty"`
	FreeTariff             *int64 `json:"free_tariff,omitempty"`
	RegionTag              *int64 `json:"region_tag,omitempty"`
	Comment                string `json:"comment,omitempty"`
	LogoURL                string `json:"logo_url,omitempty"`
	BillingResolve         bool   `json:"billing_resolve,omitempty"`
	BillingURL             string `json:"billing_url,omitempty"`
	BillingToken           string `json:"billing_token,omitempty"`
}

// ProviderUpdated carries the provider fields that changed. Nullable fields
// (DevicesPerAccountLimit, FreeTariff, RegionTag) may be Null; the others
// never are (a cleared comment or logo URL is "").
type ProviderUpdated struct {
	ProviderID             int64            `json:"provider_id"`
	Name                   Optional[string] `json:"name,omitzero"`
	Enabled                Optional[bool]   `json:"enabled,omitzero"`
	DevicesPerAccountLimit Optional[int]    `json:"devices_per_account_limit,omitzero"`
	FreeTariff             Optional[int64]  `json:"free_tariff,omitzero"`
	RegionTag              Optional[int64]  `json:"region_tag,omitzero"`
	Comment                Optional[string] `json:"comment,omitzero"`
	LogoURL                Optional[string] `json:"logo_url,omitzero"`
	BillingResolve         Optional[bool]   `json:"billing_resolve,omitzero"`
	BillingURL             Optional[string] `json:"billing_url,omitzero"`
	BillingToken           Optional[string] `json:"billing_token,omitzero"`
}

// ProviderDeleted records that a provider was deleted. Its id is never
// reused.
type ProviderDeleted struct {
	ProviderID int64 `json:"provider_id"`
}

// EventType implements Event.
func (ProviderCreated) EventType() string { return ProviderCreatedType }

// EventType implements Event.
func (ProviderUpdated) EventType() string { return ProviderUpdatedType }

// EventType implements Event.
func (ProviderDeleted) EventType() string { return ProviderDeletedType }

// changed reports whether the event carries any field.
func (e ProviderUpdated) changed() bool {
	return e.Name.Present || e.Enabled.Present || e.DevicesPerAccountLimit.Present ||
		e.FreeTariff.Present || e.RegionTag.Present || e.Comment.Present || e.LogoURL.Present || e.BillingResolve.Present || e.BillingURL.Present ||
		e.BillingToken.Present
}

func registerProviderEvents(r *Registry) {
	r.Register(ProviderCreatedType, func() Event { return new(ProviderCreated) })
	r.Register(ProviderUpdatedType, func() Event { return new(ProviderUpdated) })
	r.Register(ProviderDeletedType, func() Event { return new(ProviderDeleted) })
}
