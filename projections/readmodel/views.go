package readmodel

import (
	"slices"
	"time"

	"tvsm/domain"
)

// Account is a copy of an account's fields (the Provider API's account
// object). Its subscriptions and devices are queried separately
// (AccountSubscriptions, AccountDevices, AccountState).
type Account struct {
	ID       int64
	Provider int64
	Login    string
	PinMD5   string // lowercase hex; the API answers null, device login compares it
	Fullname string
	Enabled  bool

	RemoteCustomField      *string // nil: null
	ContractInfo           *string
	MainAddress            *string
	AccountDesc            *string
	RegionTag              *int64 // a region's id
	DevicesPerAccountLimit *int

	// Created is when the account was created (UTC, whole seconds).
	Created time.Time
	// Updated is when the account, its subscriptions or devices last
	// changed (UTC, whole seconds).
	Updated time.Time
	// LastOnline is the newest LastOnline of its devices; zero when none
	// ever logged in or connected.
	LastOnline time.Time
	// Revision is the revision of the account stream's last event the view
	// reflects: an ETag, or the expected revision of a conditional update.
	Revision uint64
}

// Subscription is a copy of an account subscription (the Provider API's
// account_subscriptions object) with the account and provider it belongs to.
type Subscription struct {
	domain.Subscription
	Account  int64
	Provider int64
}

// Device is a copy of a bound device with the account and provider it
// belongs to, and what its logins and connections told.
type Device struct {
	domain.Device
	Account  int64
	Provider int64
	// Created is when the device was bound (UTC, whole seconds).
	Created time.Time
	// FirstOnline and LastOnline are the times of its first and last login
	// or connection (UTC, whole seconds); zero when it never did.
	FirstOnline, LastOnline time.Time
	// Address is the client address of its last login or connection;
	// Firmware and OS what its last login reported. Nil when unknown.
	Address, Firmware, OS *string
}

// accountView returns the view of a record.
func accountView(a *account) Account {
	v := Account{
		ID:                a.id,
		Provider:          a.provider,
		Login:             a.field(fLogin),
		PinMD5:            a.pin(),
		Fullname:          a.field(fFullname),
		Enabled:           a.enabled(),
		RemoteCustomField: a.fieldPtr(fRemoteCustomField),
		ContractInfo:      a.fieldPtr(fContractInfo),
		MainAddress:       a.fieldPtr(fMainAddress),
		AccountDesc:       a.fieldPtr(fAccountDesc),
		RegionTag:         a.regionTag(),
		Created:           time.Unix(a.created.Unix(), 0).UTC(),
		Updated:           time.Unix(a.updated.Unix(), 0).UTC(),
		Revision:          a.rev,
	}
	var last stamp
	for i := range a.devs {
		last = max(last, a.devs[i].last)
	}
	v.LastOnline = unixOrZero(last)
	if a.flags&flagLimit != 0 {
		n := int(a.limit)
		v.DevicesPerAccountLimit = &n
	}
	return v
}

// subRef is a subscription inside an account record.
type subRef struct {
	a *account
	i int
}

func subView(r subRef) Subscription {
	return Subscription{Subscription: r.a.subs[r.i].toDomain(), Account: r.a.id, Provider: r.a.provider}
}

// devRef is a device inside an account record.
type devRef struct {
	a *account
	i int
}

func devView(r devRef) Device {
	d := &r.a.devs[r.i]
	return Device{Device: d.toDomain(), Account: r.a.id, Provider: r.a.provider, Created: time.Unix(d.created.Unix(), 0).UTC(),
		FirstOnline: unixOrZero(d.first), LastOnline: unixOrZero(d.last),
		Address: d.fieldPtr(dAddress), Firmware: d.fieldPtr(dFirmware), OS: d.fieldPtr(dOS)}
}

// unixOrZero returns a stamp as a UTC time; 0 is the zero time.
func unixOrZero(t stamp) time.Time {
	if t == 0 {
		return time.Time{}
	}
	return time.Unix(t.Unix(), 0).UTC()
}

// Copies of the small entities: the pointers and slices they carry are the
// caller's own.

func copyProvider(p domain.Provider) domain.Provider {
	p.DevicesPerAccountLimit = clonePtr(p.DevicesPerAccountLimit)
	p.FreeTariff = clonePtr(p.FreeTariff)
	p.RegionTag = clonePtr(p.RegionTag)
	return p
}

func copyTariff(t domain.Tariff) domain.Tariff {
	t.Channels = slices.Clone(t.Channels)
	t.Tag = clonePtr(t.Tag)
	return t
}

func copyChannel(c domain.Channel) domain.Channel {
	c.Categories = slices.Clone(c.Categories)
	c.TimeShiftDepth = clonePtr(c.TimeShiftDepth)
	return c
}

func copyCategory(c domain.Category) domain.Category       { return c }
func copyTag(t domain.TariffTag) domain.TariffTag          { return t }
func copyRegion(r domain.Region) domain.Region             { return r }
func copyDeviceType(d domain.DeviceType) domain.DeviceType { return d }

func copyAdmin(a domain.Admin) domain.Admin {
	a.Provider = clonePtr(a.Provider)
	return a
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
