package readmodel

import (
	"slices"
	"unsafe"

	"tvsm/domain"
	"tvsm/eventstore"
)

// state is everything the model holds. The Model's lock guards it; a
// snapshot load builds a new state and swaps it in whole.
type state struct {
	pos eventstore.Position // newest event applied

	providers  map[int64]versioned[domain.Provider]
	tariffs    map[int64]versioned[domain.Tariff]
	channels   map[int64]versioned[domain.Channel]
	categories map[int64]versioned[domain.Category]
	tags       map[int64]versioned[domain.TariffTag]
	regions    map[int64]versioned[domain.Region]
	devTypes   map[int64]versioned[domain.DeviceType]
	admins     map[string]versioned[domain.Admin]
	networks   map[int64]versioned[domain.AccountNetworks] // by provider
	netTables  map[int64]netTable                          // by provider

	deleted map[int64]tombstone // deleted accounts
	// all are the ids of every provider's items, the live accounts with
	// their records among them: s.account looks one up. (A map from ids to
	// records as well would cost 30 bytes an account.)
	all     lists
	byProv  map[int64]*provIndex
	subs    map[int64]int64    // subscription id → account id
	devs    map[int64]int64    // device id → account id
	uids    map[string]int64   // device unique id → device id
	uidDups map[string][]int64 // more devices with a unique id in uids (normally none)

	drops drops // authorisation drops by `update` commands
	sends sends // the ids of every command send, by scope
}

// tombstone is what stays of a deleted account: its stream's revision, for
// idempotence, and its provider, for scope checks of its history.
type tombstone struct {
	rev      uint64
	provider int64
	at       stamp // when it was deleted (or erased, if never deleted)
	erased   bool
}

// versioned is a small entity with the revision of the last event of its
// stream applied.
type versioned[T any] struct {
	v   T
	rev uint64
}

// lists are the live accounts (with their records), subscriptions (the
// accounts' own and the devices'), and devices, in ascending id order.
type lists struct {
	accounts          idList[*account]
	subs, dsubs, devs idList[struct{}]
}

// subList returns the list a subscription is in: the device subscriptions
// or the accounts' own.
func (l *lists) subList(x *sub) *idList[struct{}] {
	if x.device != 0 {
		return &l.dsubs
	}
	return &l.subs
}

// provIndex indexes one provider's accounts.
type provIndex struct {
	lists
	logins map[string]int64 // login → account id
}

func newState() *state {
	return newStateSized(0, 0)
}

// newStateSized returns an empty state with room for the given numbers of
// subscriptions and devices.
func newStateSized(subs, devs int) *state {
	return &state{
		providers:  make(map[int64]versioned[domain.Provider]),
		tariffs:    make(map[int64]versioned[domain.Tariff]),
		channels:   make(map[int64]versioned[domain.Channel]),
		categories: make(map[int64]versioned[domain.Category]),
		tags:       make(map[int64]versioned[domain.TariffTag]),
		regions:    make(map[int64]versioned[domain.Region]),
		devTypes:   make(map[int64]versioned[domain.DeviceType]),
		admins:     make(map[string]versioned[domain.Admin]),
		networks:   make(map[int64]versioned[domain.AccountNetworks]),
		netTables:  make(map[int64]netTable),
		deleted:    make(map[int64]tombstone),
		byProv:     make(map[int64]*provIndex),
		subs:       make(map[int64]int64, subs),
		devs:       make(map[int64]int64, devs),
		uids:       make(map[string]int64, devs),
		uidDups:    make(map[string][]int64),
		drops:      newDrops(),
		sends:      sends{byScope: make(map[int64]*idList[struct{}])},
	}
}

// account returns the record of live account id, or nil.
func (s *state) account(id int64) *account {
	a, _ := s.all.accounts.Get(id)
	return a
}

// prov returns provider p's index, creating it.
func (s *state) prov(p int64) *provIndex {
	pi, ok := s.byProv[p]
	if !ok {
		pi = &provIndex{logins: make(map[string]int64)}
		s.byProv[p] = pi
	}
	return pi
}

// putAccount publishes rec, the new record of an account whose previous
// record was old (nil for a new account), and updates the indexes.
func (s *state) putAccount(old, rec *account) {
	if old != nil && old.provider != rec.provider { // never happens: the provider is fixed
		s.removeAccount(old)
		old = nil
	}
	s.indexRecord(old, rec)
	s.indexItems(old, rec)
}

// indexRecord is putAccount's first half: the account map, the account id
// lists and the login index. It touches nothing indexItems does, so a
// snapshot load runs the two halves in parallel.
func (s *state) indexRecord(old, rec *account) {
	pi := s.prov(rec.provider)
	s.all.accounts.Set(rec.id, rec)
	pi.accounts.Set(rec.id, rec)
	if old == nil || old.data != rec.data {
		if old != nil {
			if l := old.login(); pi.logins[l] == rec.id {
				delete(pi.logins, l)
			}
		}
		// The key is a part of rec.data; re-keying on every change of the
		// text lets the old record's text be collected.
		pi.logins[rec.login()] = rec.id
	}
}

// indexItems is putAccount's second half: the subscription and device
// indexes.
func (s *state) indexItems(old, rec *account) {
	pi := s.prov(rec.provider)
	var oldSubs []sub
	var oldDevs []dev
	if old != nil {
		oldSubs, oldDevs = old.subs, old.devs
	}
	s.syncSubs(pi, rec.id, oldSubs, rec.subs)
	s.syncDevs(pi, rec.id, oldDevs, rec.devs)
}

// removeAccount drops a live account and everything indexed under it.
func (s *state) removeAccount(old *account) {
	pi := s.prov(old.provider)
	s.all.accounts.Remove(old.id)
	pi.accounts.Remove(old.id)
	if l := old.login(); pi.logins[l] == old.id {
		delete(pi.logins, l)
	}
	delete(s.drops.accounts, old.id)
	s.syncSubs(pi, old.id, old.subs, nil)
	s.syncDevs(pi, old.id, old.devs, nil)
}

// syncSubs updates the subscription indexes of account id from its old
// subscriptions to its new ones.
func (s *state) syncSubs(pi *provIndex, id int64, old, cur []sub) {
	if sameBacking(old, cur) {
		return
	}
	diffIDs(old, cur, func(x *sub) int64 { return x.id },
		func(x *sub) {
			if s.subs[x.id] == id {
				delete(s.subs, x.id)
				s.all.subList(x).Remove(x.id)
				pi.subList(x).Remove(x.id)
			}
		},
		func(x *sub) {
			s.subs[x.id] = id
			s.all.subList(x).Insert(x.id)
			pi.subList(x).Insert(x.id)
		})
}

// syncDevs updates the device indexes of account id from its old devices
// to its new ones.
func (s *state) syncDevs(pi *provIndex, id int64, old, cur []dev) {
	if sameBacking(old, cur) {
		return
	}
	// The unique id index's keys are parts of the devices' texts. A device
	// whose text was rebuilt is re-keyed (assigning an equal string key
	// replaces the stored one), so that its old text can be collected.
	for i := range cur {
		if j := slices.IndexFunc(old, func(o dev) bool { return o.id == cur[i].id }); j >= 0 && unsafe.StringData(old[j].text) != unsafe.StringData(cur[i].text) {
			if uid := cur[i].uniqueID(); s.uids[uid] == cur[i].id {
				s.uids[uid] = cur[i].id
			}
		}
	}
	diffIDs(old, cur, func(x *dev) int64 { return x.id },
		func(x *dev) {
			if s.devs[x.id] == id {
				delete(s.devs, x.id)
				s.all.devs.Remove(x.id)
				pi.devs.Remove(x.id)
				s.removeUID(x.uniqueID(), x.id)
				s.forgetDevice(x.id)
			}
		},
		func(x *dev) {
			s.devs[x.id] = id
			s.all.devs.Insert(x.id)
			pi.devs.Insert(x.id)
			s.addUID(x.uniqueID(), x.id)
		})
}

// addUID indexes device id under its unique id. The domain does not stop
// two accounts from binding one unique id (the application checks it, but
// two nodes may race), so further devices are kept in uidDups rather than
// lost. uids holds the lowest device id of a unique id (the device bound
// first), whatever the order of indexing, so a snapshot load gives the same
// answers as the replay it was taken from.
func (s *state) addUID(uid string, id int64) {
	cur, ok := s.uids[uid]
	switch {
	case !ok:
		s.uids[uid] = id
	case cur == id:
	case id < cur:
		s.uids[uid] = id
		s.uidDups[uid] = insertSorted(s.uidDups[uid], cur)
	default:
		s.uidDups[uid] = insertSorted(s.uidDups[uid], id)
	}
}

// removeUID drops device id from the unique id index.
func (s *state) removeUID(uid string, id int64) {
	dups := s.uidDups[uid]
	if s.uids[uid] == id {
		if len(dups) == 0 {
			delete(s.uids, uid)
			return
		}
		s.uids[uid] = dups[0]
		dups = dups[1:]
	} else if i, found := slices.BinarySearch(dups, id); found {
		dups = slices.Delete(slices.Clone(dups), i, i+1)
	}
	if len(dups) == 0 {
		delete(s.uidDups, uid)
	} else {
		s.uidDups[uid] = dups
	}
}

// devicesByUID returns the ids of the devices bound with unique id uid, in
// ascending order.
func (s *state) devicesByUID(uid string) []int64 {
	id, ok := s.uids[uid]
	if !ok {
		return nil
	}
	return append([]int64{id}, s.uidDups[uid]...)
}

func insertSorted(ids []int64, id int64) []int64 {
	i, found := slices.BinarySearch(ids, id)
	if found {
		return ids
	}
	return slices.Insert(slices.Clone(ids), i, id)
}

// sameBacking reports whether a and b are the same slice.
func sameBacking[E any](a, b []E) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// diffIDs calls removed for the items of old whose id is not in cur, then
// added for the items of cur whose id is not in old.
func diffIDs[E any](old, cur []E, id func(*E) int64, removed, added func(*E)) {
	in := func(items []E, x int64) bool {
		for i := range items {
			if id(&items[i]) == x {
				return true
			}
		}
		return false
	}
	if len(old)*len(cur) > 256 {
		set := make(map[int64]bool, len(old)+len(cur))
		for i := range cur {
			set[id(&cur[i])] = true
		}
		for i := range old {
			if !set[id(&old[i])] {
				removed(&old[i])
			}
		}
		clear(set)
		for i := range old {
			set[id(&old[i])] = true
		}
		for i := range cur {
			if !set[id(&cur[i])] {
				added(&cur[i])
			}
		}
		return
	}
	for i := range old {
		if !in(cur, id(&old[i])) {
			removed(&old[i])
		}
	}
	for i := range cur {
		if !in(old, id(&cur[i])) {
			added(&cur[i])
		}
	}
}
