package domain

import "time"

// Account event type names. Subscriptions and devices live in the account's
// stream because the device limit is an account invariant.
const (
	AccountCreatedType      = "AccountCreated.v2"
	AccountUpdatedType      = "AccountUpdated.v2"
	AccountDeletedType      = "AccountDeleted.v1"
	SubscriptionAddedType   = "SubscriptionAdded.v1"
	SubscriptionChangedType = "SubscriptionChanged.v1"
	SubscriptionRemovedType = "SubscriptionRemoved.v1"
	DeviceBoundType         = "DeviceBound.v1"
	DeviceChangedType       = "DeviceChanged.v1"
	DeviceUnboundType       = "DeviceUnbound.v1"
)

// AccountCreated records a new account. PinMD5 is lowercase hex. Nil
// pointers are null fields. RegionTag is the id of a region (version 1
// stored it as text; upcastRegionTag reads those).
type AccountCreated struct {
	AccountID              int64   `json:"account_id"`
	Provider               int64   `json:"provider"`
	Login                  string  `json:"login"`
	PinMD5                 string  `json:"pin_md5"`
	Fullname               string  `json:"fullname"`
	Enabled                bool    `json:"enabled"`
	RemoteCustomField      *string `json:"remote_custom_field,omitempty"`
	ContractInfo           *string `json:"contract_info,omitempty"`
	MainAddress            *string `json:"main_address,omitempty"`
	AccountDesc            *string `json:"account_desc,omitempty"`
	RegionTag              *int64  `json:"region_tag,omitempty"`
	DevicesPerAccountLimit *int    `json:"devices_per_account_limit,omitempty"`
}

// AccountUpdated carries the account fields that changed, with their new
// values. The nullable ones (RemoteCustomField to DevicesPerAccountLimit)
// may be Null; Enabled, Login, PinMD5 and Fullname never are. A Login change
// means the new login was reserved before the event was appended.
type AccountUpdated struct {
	AccountID              int64            `json:"account_id"`
	Enabled                Optional[bool]   `json:"enabled,omitzero"`
	Login                  Optional[string] `json:"login,omitzero"`
	PinMD5                 Optional[string] `json:"pin_md5,omitzero"`
	Fullname               Optional[string] `json:"fullname,omitzero"`
	RemoteCustomField      Optional[string] `json:"remote_custom_field,omitzero"`
	ContractInfo           Optional[string] `json:"contract_info,omitzero"`
	MainAddress            Optional[string] `json:"main_address,omitzero"`
	AccountDesc            Optional[string] `json:"account_desc,omitzero"`
	RegionTag              Optional[int64]  `json:"region_tag,omitzero"`
	DevicesPerAccountLimit Optional[int]    `json:"devices_per_account_limit,omitzero"`
}

// AccountDeleted records that an account was deleted, and with it its
// subscriptions and devices (readers drop them; no per-item events follow).
// Its id is never reused.
type AccountDeleted struct {
	AccountID int64 `json:"account_id"`
}

// SubscriptionAdded records a subscription of the account to a tariff from
// Start, until Stop (nil: open-ended). Times are UTC. Device, when set, is
// the bound device the subscription is for (TVIP's device subscription);
// every reader that counts an account's tariffs counts it too.
type SubscriptionAdded struct {
	AccountID      int64      `json:"account_id"`
	SubscriptionID int64      `json:"subscription_id"`
	Tariff         int64      `json:"tariff"`
	Start          time.Time  `json:"start"`
	Stop           *time.Time `json:"stop,omitempty"`
	Device         int64      `json:"device,omitempty"`
	TimeShiftDepth *int       `json:"time_shift_depth,omitempty"`
}

// SubscriptionChanged carries the subscription fields that changed. Stop
// set to Null reopens the subscription (open-ended again); Tariff and Start
// are never Null.
type SubscriptionChanged struct {
	AccountID      int64               `json:"account_id"`
	SubscriptionID int64               `json:"subscription_id"`
	Tariff         Optional[int64]     `json:"tariff,omitzero"`
	Start          Optional[time.Time] `json:"start,omitzero"`
	Stop           Optional[time.Time] `json:"stop,omitzero"`
	TimeShiftDepth Optional[int]       `json:"time_shift_depth,omitzero"`
}

// SubscriptionRemoved records that a subscription was deleted (as opposed
// to ended by a stop date).
type SubscriptionRemoved struct {
	AccountID      int64 `json:"account_id"`
	SubscriptionID int64 `json:"subscription_id"`
}

// DeviceBound records a device bound to the account, with the fields its
// provider set when it registered the device (none when the device bound
// itself by logging in).
type DeviceBound struct {
	AccountID         int64       `json:"account_id"`
	DeviceID          int64       `json:"device_id"`
	UniqueID          string      `json:"unique_id"`
	Class             DeviceClass `json:"class"`
	Model             string      `json:"model,omitempty"`
	MAC               *string     `json:"mac,omitempty"`
	RemoteCustomField *string     `json:"remote_custom_field,omitempty"`
	Comment           *string     `json:"comment,omitempty"`
	UseNAT            bool        `json:"use_nat,omitempty"`
	UdpxyAddr         *string     `json:"udpxy_addr,omitempty"`
	DeviceType        *int64      `json:"device_type,omitempty"`
}

// fields returns the provider's fields the event binds the device with.
func (e DeviceBound) fields() DeviceFields {
	return DeviceFields{MAC: e.MAC, RemoteCustomField: e.RemoteCustomField, Comment: e.Comment, UseNAT: e.UseNAT,
		UdpxyAddr: e.UdpxyAddr, DeviceType: e.DeviceType}
}

// DeviceChanged carries the provider's fields of a device that changed;
// all but UseNAT may be Null.
type DeviceChanged struct {
	AccountID         int64            `json:"account_id"`
	DeviceID          int64            `json:"device_id"`
	MAC               Optional[string] `json:"mac,omitzero"`
	RemoteCustomField Optional[string] `json:"remote_custom_field,omitzero"`
	Comment           Optional[string] `json:"comment,omitzero"`
	UseNAT            Optional[bool]   `json:"use_nat,omitzero"`
	UdpxyAddr         Optional[string] `json:"udpxy_addr,omitzero"`
	DeviceType        Optional[int64]  `json:"device_type,omitzero"`
}

func (e DeviceChanged) changed() bool {
	return e.MAC.Present || e.RemoteCustomField.Present || e.Comment.Present || e.UseNAT.Present ||
		e.UdpxyAddr.Present || e.DeviceType.Present
}

// DeviceUnbound records a device removed from the account. UniqueID is
// repeated so readers can drop their unique-id index without looking up.
type DeviceUnbound struct {
	AccountID int64  `json:"account_id"`
	DeviceID  int64  `json:"device_id"`
	UniqueID  string `json:"unique_id"`
}

// EventType implements Event.
func (AccountCreated) EventType() string { return AccountCreatedType }

// EventType implements Event.
func (AccountUpdated) EventType() string { return AccountUpdatedType }

// EventType implements Event.
func (AccountDeleted) EventType() string { return AccountDeletedType }

// EventType implements Event.
func (SubscriptionAdded) EventType() string { return SubscriptionAddedType }

// EventType implements Event.
func (SubscriptionChanged) EventType() string { return SubscriptionChangedType }

// EventType implements Event.
func (SubscriptionRemoved) EventType() string { return SubscriptionRemovedType }

// EventType implements Event.
func (DeviceBound) EventType() string { return DeviceBoundType }

// EventType implements Event.
func (DeviceChanged) EventType() string { return DeviceChangedType }

// EventType implements Event.
func (DeviceUnbound) EventType() string { return DeviceUnboundType }

// changed reports whether the event carries any field.
func (e AccountUpdated) changed() bool {
	return e.Enabled.Present || e.Login.Present || e.PinMD5.Present || e.Fullname.Present ||
		e.RemoteCustomField.Present || e.ContractInfo.Present || e.MainAddress.Present ||
		e.AccountDesc.Present || e.RegionTag.Present || e.DevicesPerAccountLimit.Present
}

func registerAccountEvents(r *Registry) {
	registerAccountUpcasters(r)
	r.Register(AccountCreatedType, func() Event { return new(AccountCreated) })
	r.Register(AccountUpdatedType, func() Event { return new(AccountUpdated) })
	r.Register(AccountDeletedType, func() Event { return new(AccountDeleted) })
	r.Register(AccountErasedType, func() Event { return new(AccountErased) })
	r.Register(SubscriptionAddedType, func() Event { return new(SubscriptionAdded) })
	r.Register(SubscriptionChangedType, func() Event { return new(SubscriptionChanged) })
	r.Register(SubscriptionRemovedType, func() Event { return new(SubscriptionRemoved) })
	r.Register(DeviceBoundType, func() Event { return new(DeviceBound) })
	r.Register(DeviceChangedType, func() Event { return new(DeviceChanged) })
	r.Register(DeviceUnboundType, func() Event { return new(DeviceUnbound) })
}
