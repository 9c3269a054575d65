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
		PinMD5:            a.pin(),
		Fullname:          a.field(fFullname),
		RemoteCustomField: a.fieldPtr(fRemoteCustomField),
		ContractInfo:      a.fieldPtr(fContractInfo),
		MainAddress:       a.fieldPtr(fMainAddress),
		AccountDesc:       a.fieldPtr(fAccountDesc),
		RegionTag:         a.regionTag(),
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

// regionTag returns region_tag, nil when null.
func (a *account) regionTag() *int64 {
	if a.region == 0 {
		return nil
	}
	r := a.region
	return &r
}

// recordOf returns the record of domain state d, reusing what is unchanged
// from old (nil for a new account): the packed text, the subscription and
// device slices, and the devices themselves. created is the account's
// creation time for a new account; at is the time of the event that led
// to d: the binding time of devices that old does not have, and the
// account's updated.
func recordOf(d domain.Account, old *account, created, at int64) *account {
	r := &account{id: d.ID, provider: d.Provider, created: stampOf(created), updated: stampOf(at)}
	if d.RegionTag != nil {
		r.region = *d.RegionTag
	}
	if d.Enabled {
		r.flags |= flagEnabled
	}
	if l := d.DevicesPerAccountLimit; l != nil {
		r.flags |= flagLimit
		r.limit = int32(min(max(*l, math.MinInt32), math.MaxInt32))
	}
	fields := [numFields]string{fLogin: d.Login, fPinMD5: packHex(d.PinMD5), fFullname: d.Fullname}
	nullables := [...]*string{d.RemoteCustomField, d.ContractInfo, d.MainAddress, d.AccountDesc}
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
		r.updated = max(r.updated, old.updated)
		r.subs = reuseSubs(d.Subscriptions, old.subs)
		r.devs = reuseDevs(d.Devices, old.devs, r.updated)
	} else {
		r.subs = reuseSubs(d.Subscriptions, nil)
		r.devs = reuseDevs(d.Devices, nil, r.updated)
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

// reuseDevs returns the record form of devs: old itself when every device
// is the same, otherwise a new slice sharing old's unchanged devices; a
// changed device keeps its binding time and activity, a device not in old
// is bound at bound.
func reuseDevs(devs []domain.Device, old []dev, bound stamp) []dev {
	if len(devs) == 0 {
		return nil
	}
	if len(devs) == len(old) {
		same := true
		for i, d := range devs {
			if !old[i].is(d) {
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
		switch {
		case j >= 0 && old[j].is(d):
			out[i] = old[j]
		case j >= 0:
			out[i] = devOf(d, old[j].created, old[j].activity())
		default:
			out[i] = devOf(d, bound, activity{})
		}
	}
	return out
}

// is reports whether the record holds domain device d exactly. It runs
// for every device on every change of an account, so it allocates
// nothing.
func (r *dev) is(d domain.Device) bool {
	if r.id != d.ID || r.uniqueID() != d.UniqueID || r.model() != d.Model || r.deviceClass() != d.Class ||
		(r.flags&devUseNAT != 0) != d.UseNAT {
		return false
	}
	if d.DeviceType == nil && r.deviceType != 0 || d.DeviceType != nil && *d.DeviceType != r.deviceType {
		return false
	}
	for k, p := range [...]*string{d.MAC, d.RemoteCustomField, d.Comment, d.UdpxyAddr} {
		set := r.flags&(devNotNull<<k) != 0
		if set != (p != nil) || p != nil && !(k == 0 && sameMAC(r.field(dMAC), *p)) && r.field(dMAC+k) != *p {
			return false
		}
	}
	return true
}
