package readmodel

import (
	"cmp"
	"io"
	"slices"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/projections"
)

// WriteSnapshot atomically replaces the snapshot at path with the model's
// state, stamped with the position of the newest event it holds (see
// projections.WriteSnapshot: temporary file, fsync, rename). It returns that
// position.
//
// The state is captured under the read lock in one short step (the account
// records are immutable, so capturing them is copying their pointers: about
// 30 ms for a million), then encoded without the lock, so neither the
// applier nor readers wait for the disk. At most one WriteSnapshot per path may run at a time.
func (m *Model) WriteSnapshot(path string) (eventstore.Position, error) {
	c := m.capture()
	if err := projections.WriteSnapshot(path, c.pos, c.encode); err != nil {
		return eventstore.Position{}, err
	}
	return c.pos, nil
}

// LoadSnapshot replaces the model's state with the snapshot at path and
// returns the snapshot's position: resume the log after it with
// projections.SnapshotCheckpoints{Position: pos}. Call it before the runner
// starts. On any error the model is left as it was; a missing file gives an
// error satisfying errors.Is(err, fs.ErrNotExist), a damaged or foreign one
// an error wrapping projections.ErrCorruptSnapshot: start empty and replay
// the whole log then.
//
// Start-up:
//
//	m := readmodel.New(reg)
//	pos, err := m.LoadSnapshot(path)
//	if err != nil { // log unless errors.Is(err, fs.ErrNotExist)
//		pos = eventstore.Beginning
//	}
//	r := projections.NewRunner(store, reg, m, projections.SnapshotCheckpoints{Position: pos}, opts)
func (m *Model) LoadSnapshot(path string) (eventstore.Position, error) {
	var st *state
	sealer := m.snapshotSealer()
	pos, err := projections.ReadSnapshot(path, func(r io.Reader) error {
		var err error
		st, err = decodeState(r, sealer)
		return err
	})
	if err != nil {
		return eventstore.Position{}, err
	}
	st.pos = pos
	m.mu.Lock()
	m.st = st
	m.mu.Unlock()
	return pos, nil
}

// capture is a consistent cut of the state, safe to encode without the
// lock.
type capture struct {
	sealer   TextSealer
	pos      eventstore.Position
	catalog  snapCatalog
	accounts []*account
	subs     int
	devs     int
	deleted  []snapTombstone
	// drops are the authorisation state: drops of providers, accounts and
	// devices, each by id.
	drops [3][]idValue
	// perProvider counts the accounts of each provider, for the loader
	// to size its login indexes.
	perProvider []providerCount
}

type providerCount struct {
	id       int64
	accounts int
}

// capture takes a cut of the state.
func (m *Model) capture() *capture {
	c := &capture{sealer: m.snapshotSealer()}
	m.read(func(s *state) {
		c.pos = s.pos
		c.catalog = snapCatalog{
			Providers:  entries(s.providers, copyProvider),
			Tariffs:    entries(s.tariffs, copyTariff),
			Channels:   entries(s.channels, copyChannel),
			Categories: entries(s.categories, copyCategory),
			TariffTags: entries(s.tags, copyTag),
			Regions:    entries(s.regions, copyRegion),
			DevTypes:   entries(s.devTypes, copyDeviceType),
			Admins:     entries(s.admins, copyAdmin),
			Networks:   entries(s.networks, copyNetworks),
			Sends:      s.sends.capture(),
		}
		// In id order, so that loading appends to the id lists.
		c.accounts = make([]*account, 0, s.all.accounts.Len())
		for _, a := range s.all.accounts.Walk(false, 0) {
			c.accounts = append(c.accounts, a)
		}
		c.subs, c.devs = len(s.subs), len(s.devs)
		for id, pi := range s.byProv {
			c.perProvider = append(c.perProvider, providerCount{id, pi.accounts.Len()})
		}
		c.deleted = make([]snapTombstone, 0, len(s.deleted))
		for id, t := range s.deleted {
			c.deleted = append(c.deleted, snapTombstone{id, t})
		}
		for i, m := range s.drops.all() {
			c.drops[i] = idValues(m, func(v uint64) int64 { return int64(v) })
		}
	})
	slices.SortFunc(c.deleted, func(a, b snapTombstone) int { return cmp.Compare(a.id, b.id) })
	// Drops are few: sorted, for a stable payload.
	for _, l := range c.drops {
		slices.SortFunc(l, func(a, b idValue) int { return cmp.Compare(a.id, b.id) })
	}
	slices.SortFunc(c.perProvider, func(a, b providerCount) int { return cmp.Compare(a.id, b.id) })
	return c
}

// snapCatalog is the small entities, stored as JSON: they are few, and
// JSON keeps their encoding in step with the domain types. A field the
// domain adds reads as its zero value from an older snapshot, so every new
// field's zero value must mean what the entities had before it existed
// (no tag, no region, an enabled channel); the same goes for a new kind of
// entity, which an older snapshot lacks.
type snapCatalog struct {
	Providers  []snapEntry[int64, domain.Provider]   `json:"providers"`
	Tariffs    []snapEntry[int64, domain.Tariff]     `json:"tariffs"`
	Channels   []snapEntry[int64, domain.Channel]    `json:"channels"`
	Categories []snapEntry[int64, domain.Category]   `json:"categories"`
	TariffTags []snapEntry[int64, domain.TariffTag]  `json:"tariff_tags"`
	Regions    []snapEntry[int64, domain.Region]     `json:"regions"`
	DevTypes   []snapEntry[int64, domain.DeviceType] `json:"device_types"`
	Admins     []snapEntry[string, domain.Admin]     `json:"admins"`
	// Networks are the providers' account networks, by provider.
	Networks []snapEntry[int64, domain.AccountNetworks] `json:"networks"`
	// Sends are the command send ids by scope (0: spanning providers).
	Sends []snapSends `json:"sends"`
}

// snapEntry is one small entity with its key and revision.
type snapEntry[K cmp.Ordered, T any] struct {
	Key K      `json:"key"`
	Rev uint64 `json:"rev"`
	V   T      `json:"v"`
}

// snapTombstone is a deleted account's id and tombstone.
type snapTombstone struct {
	id int64
	tombstone
}

// idValue is an entry of an id-keyed map of numbers (drops, connections).
type idValue struct{ id, v int64 }

// idValues returns the entries of m, in no particular order.
func idValues[V any](m map[int64]V, conv func(V) int64) []idValue {
	out := make([]idValue, 0, len(m))
	for id, v := range m {
		out = append(out, idValue{id, conv(v)})
	}
	return out
}

// entries returns copies of a small-entity map's entries, by key.
func entries[K cmp.Ordered, T any](m map[K]versioned[T], copyOf func(T) T) []snapEntry[K, T] {
	out := make([]snapEntry[K, T], 0, len(m))
	for k, e := range m {
		out = append(out, snapEntry[K, T]{Key: k, Rev: e.rev, V: copyOf(e.v)})
	}
	slices.SortFunc(out, func(a, b snapEntry[K, T]) int { return cmp.Compare(a.Key, b.Key) })
	return out
}

// restoreCatalog puts the small entities of a snapshot into s.
func restoreCatalog(s *state, cat *snapCatalog) {
	restore(s.providers, cat.Providers)
	restore(s.tariffs, cat.Tariffs)
	restore(s.channels, cat.Channels)
	restore(s.categories, cat.Categories)
	restore(s.tags, cat.TariffTags)
	restore(s.regions, cat.Regions)
	restore(s.devTypes, cat.DevTypes)
	restore(s.admins, cat.Admins)
	restore(s.networks, cat.Networks)
	s.sends.restore(cat.Sends)
	for p, n := range s.networks {
		s.netTables[p] = tableOf(n.v)
	}
}

// restore puts the entries back into a small-entity map.
func restore[K cmp.Ordered, T any](m map[K]versioned[T], es []snapEntry[K, T]) {
	for _, e := range es {
		m[e.Key] = versioned[T]{v: e.V, rev: e.Rev}
	}
}
