package readmodel

import (
	"math"

	"tvsm/domain"
)

// toDomain returns the account as the domain state has it (subscriptions
// and devices included). The result shares no memory the applier changes.
func (a *account) toDomain() domain.Account {
	d := domain.Account{
		ID:                a.id,
		Provider:          a.provider,
		Login:             a.field(fLogin),
		PinMD5:            a.field(fPinMD5),
		Fullname:          a.field(fFullname),
		RemoteCustomField: a.fieldPtr(fRemoteCustomField),
		ContractInfo:      a.fieldPtr(fContractInfo),
		MainAddress:       a.fieldPtr(fMainAddress),
		AccountDesc:       a.fieldPtr(fAccountDesc),
		RegionTag:         a.fieldPtr(fRegionTag),
		Enabled:           a.enabled(),
	}
	if a.flags&flagLimit != 0 {
		n := int(a.limit)
		d.DevicesPerAccountLimit = &n
	}
	if len(a.subs) > 0 {
		d.Subscriptions = make([]domain.Subscription, len(a.subs))
		for i, s := range a.subs {
			d.Subscriptions[i] = s.toDomain()
		}
	}
	if len(a.devs) > 0 {
		d.Devices = make([]domain.Device, len(a.devs))
		for i := range a.devs {
			d.Devices[i] = a.devs[i].toDomain()
		}
	}
	return d
}

// recordOf returns the record of domain state d, reusing what is unchanged
// from old (nil for a new account): the packed text, the subscription and
// device slices, and the devices themselves. created is the account's
// creation time for a new account; bound is the binding time of devices
// that old does not have.
func recordOf(d domain.Account, old *account, created, bound int64) *account {
	r := &account{id: d.ID, provider: d.Provider, created: created}
	if d.Enabled {
		r.flags |= flagEnabled
	}
	if l := d.DevicesPerAccountLimit; l != nil {
		r.flags |= flagLimit
		r.limit = int32(min(max(*l, math.MinInt32), math.MaxInt32))
	}
	fields := [numFields]string{fLogin: d.Login, fPinMD5: d.PinMD5, fFullname: d.Fullname}
	nullables := [...]*string{d.RemoteCustomField, d.ContractInfo, d.MainAddress, d.AccountDesc, d.RegionTag}
	for k, p := range nullables {
		if p != nil {
			fields[fRemoteCustomField+k] = *p
			r.flags |= flagNotNull << k
		}
	}
	if old != nil {
		r.created = old.created
		if sameFields(old, &fields) {
			// Unchanged text shares the old string, so that indexRecord,
			// which compares the texts, keeps its keys (parts of the
			// string) only while they are the record's own.
			r.data = old.data
		}
		r.subs = reuseSubs(d.Subscriptions, old.subs)
		r.devs = reuseDevs(d.Devices, old.devs, bound)
	} else {
		r.subs = reuseSubs(d.Subscriptions, nil)
		r.devs = reuseDevs(d.Devices, nil, bound)
	}
	if r.data == "" {
		r.data = packFields(&fields)
	}
	return r
}

// sameFields reports whether a's text fields equal fields.
func sameFields(a *account, fields *[numFields]string) bool {
	s := a.data
	for _, f := range fields {
		n, w := uvarintString(s)
		s = s[w:]
		if s[:n] != f {
			return false
		}
		s = s[n:]
	}
	return true
}

// reuseSubs returns the record form of subs: old itself when equal.
func reuseSubs(subs []domain.Subscription, old []sub) []sub {
	if len(subs) == 0 {
		return nil
	}
	if len(subs) == len(old) {
		same := true
		for i, s := range subs {
			if subOf(s) != old[i] {
				same = false
				break
			}
		}
		if same {
			return old
		}
	}
	out := make([]sub, len(subs))
	for i, s := range subs {
		out[i] = subOf(s)
	}
	return out
}

// reuseDevs returns the record form of devs: old itself when the device ids
// are the same, otherwise a new slice sharing old's devices, with devices
// not in old bound at bound.
func reuseDevs(devs []domain.Device, old []dev, bound int64) []dev {
	if len(devs) == 0 {
		return nil
	}
	if len(devs) == len(old) {
		same := true
		for i, d := range devs {
			if d.ID != old[i].id {
				same = false
				break
			}
		}
		if same {
			return old
		}
	}
	out := make([]dev, len(devs))
	for i, d := range devs {
		j := -1
		for k := range old {
			if old[k].id == d.ID {
				j = k
				break
			}
		}
		if j >= 0 {
			out[i] = old[j]
		} else {
			out[i] = devOf(d, bound)
		}
	}
	return out
}
