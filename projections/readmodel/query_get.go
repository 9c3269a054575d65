package readmodel

import (
	"slices"

	"tvsm/domain"
)

// Lookups by id. They ignore provider scope: the caller tells "not found"
// (404) from "not yours" (403) by the Provider of what it gets.

// Account returns the live account with the given id.
func (m *Model) Account(id int64) (Account, bool) {
	a := m.accountRecord(id)
	if a == nil {
		return Account{}, false
	}
	return accountView(a), true
}

// AccountByLogin returns the live account of provider with the given login
// (logins are unique within a provider and case-sensitive).
func (m *Model) AccountByLogin(provider int64, login string) (Account, bool) {
	var a *account
	m.read(func(s *state) {
		if pi := s.byProv[provider]; pi != nil {
			if id, ok := pi.logins[login]; ok {
				a = s.account(id)
			}
		}
	})
	if a == nil {
		return Account{}, false
	}
	return accountView(a), true
}

// AccountOwner returns the provider of account id, live or deleted: the
// scope check of an account's history and of change-feed events, which
// outlive the account.
func (m *Model) AccountOwner(id int64) (provider int64, ok bool) {
	m.read(func(s *state) {
		if a := s.account(id); a != nil {
			provider, ok = a.provider, true
		} else if t, dead := s.deleted[id]; dead && t.provider != 0 {
			provider, ok = t.provider, true
		}
	})
	return provider, ok
}

// AccountState returns the account as the domain sees it, subscriptions
// and devices included, all from one consistent moment: what the Device
// API needs to decide on services (domain.Account.ServicesAvailable,
// ActiveTariffs, DeviceLimit).
func (m *Model) AccountState(id int64) (domain.Account, bool) {
	a := m.accountRecord(id)
	if a == nil {
		return domain.Account{}, false
	}
	return a.toDomain(), true
}

// AccountSubscriptions returns the subscriptions of the live account id,
// in the order they were added; nil when there are none or no such account.
func (m *Model) AccountSubscriptions(id int64) []Subscription {
	a := m.accountRecord(id)
	if a == nil || len(a.subs) == 0 {
		return nil
	}
	out := make([]Subscription, len(a.subs))
	for i := range a.subs {
		out[i] = subView(subRef{a, i})
	}
	return out
}

// AccountDevices returns the devices bound to the live account id, in the
// order they were bound; nil when there are none or no such account.
func (m *Model) AccountDevices(id int64) []Device {
	a := m.accountRecord(id)
	if a == nil || len(a.devs) == 0 {
		return nil
	}
	out := make([]Device, len(a.devs))
	for i := range a.devs {
		out[i] = devView(devRef{a, i})
	}
	return out
}

// Subscription returns the subscription with the given id (of a live
// account).
func (m *Model) Subscription(id int64) (Subscription, bool) {
	var r subRef
	var ok bool
	m.read(func(s *state) { r, ok = s.subRef(id) })
	if !ok {
		return Subscription{}, false
	}
	return subView(r), true
}

// Device returns the bound device with the given id.
func (m *Model) Device(id int64) (Device, bool) {
	var r devRef
	var ok bool
	m.read(func(s *state) { r, ok = s.devRef(id) })
	if !ok {
		return Device{}, false
	}
	return devView(r), true
}

// DeviceByUniqueID returns the bound device with the given unique id. Should
// two accounts have bound the same unique id, it returns the one with the
// lowest id, normally the one bound first (ListDevices with a UniqueID
// filter returns them all).
func (m *Model) DeviceByUniqueID(uniqueID string) (Device, bool) {
	var r devRef
	var ok bool
	m.read(func(s *state) {
		if id, found := s.uids[uniqueID]; found {
			r, ok = s.devRef(id)
		}
	})
	if !ok {
		return Device{}, false
	}
	return devView(r), true
}

// Provider returns the provider with the given id, unless deleted. Its
// Billing.Token is the billing proxy's secret: never show it.
func (m *Model) Provider(id int64) (domain.Provider, bool) {
	return getVersioned(m, func(s *state) map[int64]versioned[domain.Provider] { return s.providers }, id,
		domain.Provider.Exists, copyProvider)
}

// Tariff returns the tariff with the given id, unless deleted.
func (m *Model) Tariff(id int64) (domain.Tariff, bool) {
	return getVersioned(m, func(s *state) map[int64]versioned[domain.Tariff] { return s.tariffs }, id,
		domain.Tariff.Exists, copyTariff)
}

// Channel returns the channel with the given id, unless deleted.
func (m *Model) Channel(id int64) (domain.Channel, bool) {
	return getVersioned(m, func(s *state) map[int64]versioned[domain.Channel] { return s.channels }, id,
		domain.Channel.Exists, copyChannel)
}

// Category returns the category with the given id, unless deleted.
func (m *Model) Category(id int64) (domain.Category, bool) {
	return getVersioned(m, func(s *state) map[int64]versioned[domain.Category] { return s.categories }, id,
		domain.Category.Exists, copyCategory)
}

// TariffTag returns the tariff tag with the given id, unless deleted.
func (m *Model) TariffTag(id int64) (domain.TariffTag, bool) {
	return getVersioned(m, func(s *state) map[int64]versioned[domain.TariffTag] { return s.tags }, id,
		domain.TariffTag.Exists, copyTag)
}

// Region returns the region with the given id, unless deleted.
func (m *Model) Region(id int64) (domain.Region, bool) {
	return getVersioned(m, func(s *state) map[int64]versioned[domain.Region] { return s.regions }, id,
		domain.Region.Exists, copyRegion)
}

// DeviceType returns the device type with the given id, unless deleted.
func (m *Model) DeviceType(id int64) (domain.DeviceType, bool) {
	return getVersioned(m, func(s *state) map[int64]versioned[domain.DeviceType] { return s.devTypes }, id,
		domain.DeviceType.Exists, copyDeviceType)
}

// Admin returns the administrator with the given login, unless deleted:
// its bcrypt PasswordHash and provider scope, for HTTP Basic
// authentication.
func (m *Model) Admin(login string) (domain.Admin, bool) {
	return getVersioned(m, func(s *state) map[string]versioned[domain.Admin] { return s.admins }, login,
		domain.Admin.Exists, copyAdmin)
}

// getVersioned looks key up in the small-entity map of the state and
// returns a copy of it when it exists.
func getVersioned[K comparable, T any](m *Model, table func(*state) map[K]versioned[T], key K, exists func(T) bool, copyOf func(T) T) (T, bool) {
	var out T
	var ok bool
	m.read(func(s *state) {
		if e, found := table(s)[key]; found && exists(e.v) {
			out, ok = copyOf(e.v), true
		}
	})
	return out, ok
}

// accountRecord returns the record of live account id, or nil.
func (m *Model) accountRecord(id int64) *account {
	var a *account
	m.read(func(s *state) { a = s.account(id) })
	return a
}

// subRef finds subscription id.
func (s *state) subRef(id int64) (subRef, bool) {
	a := s.account(s.subs[id])
	if a == nil {
		return subRef{}, false
	}
	for i := range a.subs {
		if a.subs[i].id == id {
			return subRef{a, i}, true
		}
	}
	return subRef{}, false
}

// devRef finds device id.
func (s *state) devRef(id int64) (devRef, bool) {
	a := s.account(s.devs[id])
	if a == nil {
		return devRef{}, false
	}
	for i := range a.devs {
		if a.devs[i].id == id {
			return devRef{a, i}, true
		}
	}
	return devRef{}, false
}

// AccountsEver returns the ids of the accounts of provider (0: every
// provider) within scope that exist or were deleted, ascending: what may
// have existed at a past time.
func (m *Model) AccountsEver(scope Scope, provider int64) []int64 {
	p, ok := scope.narrow(provider)
	if !ok {
		return nil
	}
	var ids []int64
	m.read(func(s *state) {
		l := &s.all.accounts
		if p != 0 {
			pi := s.byProv[p]
			if pi == nil {
				l = nil
			} else {
				l = &pi.accounts
			}
		}
		if l != nil {
			ids = make([]int64, 0, l.Len()+len(s.deleted))
			for id := range l.Walk(false, 0) {
				ids = append(ids, id)
			}
		}
		for id, t := range s.deleted {
			if (p == 0 && scope.Allows(t.provider)) || t.provider == p {
				ids = append(ids, id)
			}
		}
	})
	slices.Sort(ids)
	return ids
}
