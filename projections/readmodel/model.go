package readmodel

import (
	"slices"
	"sync"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/projections"
)

// Name is the projection name of the read model, the key of its checkpoint
// and snapshot. Change it (readmodel.v2) when the state's shape or meaning
// changes: the checkpoint is keyed by the name, so a new name means a full
// replay.
const Name = "readmodel.v2"

// Model is the in-memory read model of providers, tariffs, tariff tags,
// channels, categories, regions, device types, administrators and accounts with their subscriptions and
// devices. It is a projections.Handler: a Runner feeds it the log, and the
// Provider, Admin and Device APIs query it. Create it with New.
//
// One goroutine applies events (the runner's); any number read. Each event
// is applied under the write lock, so readers see the state between two
// events, never in the middle of one.
type Model struct {
	reg *domain.Registry
	ev  evolvers

	// hold is held by Apply for a whole batch, and by Hold.
	hold    sync.Mutex
	mu      sync.RWMutex
	st      *state
	skipped uint64 // guarded by mu

	// sealer seals the personal text of snapshots (SealSnapshots); nil
	// writes it plain.
	sealer TextSealer
}

var _ projections.Handler = (*Model)(nil)

// New returns an empty model decoding events with reg, which must hold the
// domain's events (domain.RegisterEvents); nil means a registry of just
// those.
func New(reg *domain.Registry) *Model {
	if reg == nil {
		reg = domain.NewRegistry()
		domain.RegisterEvents(reg)
	}
	return &Model{reg: reg, ev: newEvolvers(), st: newState()}
}

// Name implements projections.Handler; it returns the constant Name.
func (m *Model) Name() string { return Name }

// Filter implements projections.Handler: the streams of the aggregates the
// model shows, and the command and device streams for device authorisation.
// The application layer's bookkeeping streams (ids-*, idem-*, login-*) are
// not among them. The event types are every registered type (any version)
// except those of ignoredTypes, so delivery claims, receipts and viewing
// reports never reach the model.
func (m *Model) Filter() eventstore.Filter {
	prefixes := make([]string, len(shownKinds))
	for i, k := range shownKinds {
		prefixes[i] = k.Prefix()
	}
	var types []string
	for _, name := range m.reg.Types() {
		if f := projections.TypeFamily(name); !ignored(name) && !slices.Contains(types, f) {
			types = append(types, f)
		}
	}
	return eventstore.Filter{StreamPrefixes: prefixes, EventTypePrefixes: types}
}

// Position returns the log position of the newest event applied (or of the
// snapshot loaded): the position to store a snapshot at and to resume
// after.
func (m *Model) Position() eventstore.Position {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.st.pos
}

// Stats are counts of what the model holds, for metrics and logs.
type Stats struct {
	Position      eventstore.Position
	Accounts      int // live accounts
	Subscriptions int
	Devices       int
	Providers     int // including deleted ones (kept as tombstones)
	Tariffs       int
	Channels      int
	Categories    int
	TariffTags    int
	Regions       int
	DeviceTypes   int
	Admins        int
	// Skipped counts deliveries of events of an unknown type, passed over
	// (see Apply), since the model was created: an operational counter, not
	// state (a redelivered event counts again; snapshots do not keep it).
	Skipped uint64
}

// Stats returns the model's counts.
func (m *Model) Stats() Stats {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s := m.st
	return Stats{
		Position:      s.pos,
		Accounts:      s.all.accounts.Len(),
		Subscriptions: len(s.subs),
		Devices:       len(s.devs),
		Providers:     len(s.providers),
		Tariffs:       len(s.tariffs),
		Channels:      len(s.channels),
		Categories:    len(s.categories),
		TariffTags:    len(s.tags),
		Regions:       len(s.regions),
		DeviceTypes:   len(s.devTypes),
		Admins:        len(s.admins),
		Skipped:       m.skipped,
	}
}

// read runs f with the state under the read lock.
func (m *Model) read(f func(s *state)) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	f(m.st)
}
