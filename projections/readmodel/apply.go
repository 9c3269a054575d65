package readmodel

import (
	"context"
	"fmt"
	"iter"
	"slices"

	"tvsm/domain"
	"tvsm/projections"
)

// shownKinds are the streams the model follows: the aggregates it shows,
// the command streams for device authorisation (`update` commands drop
// it), and the device streams for what logins and connections tell of a
// device (last online, address, firmware).
var shownKinds = []domain.StreamKind{
	domain.StreamAccount, domain.StreamProvider, domain.StreamTariff, domain.StreamChannel,
	domain.StreamCategory, domain.StreamAdmin, domain.StreamCommand, domain.StreamDevice,
	domain.StreamTariffTag, domain.StreamRegion, domain.StreamDeviceType, domain.StreamNetworks,
}

// shown reports whether the model follows streams of kind k.
func shown(k domain.StreamKind) bool {
	return slices.Contains(shownKinds, k)
}

// ignoredTypes are the event types the model has no use for: most of the
// command streams, viewing reports in the device streams, and journal
// events (domain.JournalEventTypes) in account streams.
// The filter keeps them away (a device's viewing reports above all: they
// are the bulk of the log), and should one arrive anyway the runner does
// not decode it (IgnoredTypes) and Apply passes over it.
var ignoredTypes = append([]string{
	domain.CommandsSentType, domain.CommandExpiredType, domain.CommandsAckedType, domain.CommandsConfirmedType,
	domain.ViewingReportedType,
}, domain.JournalEventTypes()...)

// ignored reports whether events of type name are passed over.
func ignored(name string) bool {
	family := projections.TypeFamily(name)
	for _, t := range ignoredTypes {
		if projections.TypeFamily(t) == family {
			return true
		}
	}
	return false
}

// IgnoredTypes implements projections.TypeIgnorer: the runner leaves
// ignoredTypes undecoded.
func (m *Model) IgnoredTypes() []string { return ignoredTypes }

// evolvers are the domain's evolve functions: the model applies events
// exactly as the aggregates do.
type evolvers struct {
	account  func(domain.Account, domain.Event) domain.Account
	provider func(domain.Provider, domain.Event) domain.Provider
	tariff   func(domain.Tariff, domain.Event) domain.Tariff
	channel  func(domain.Channel, domain.Event) domain.Channel
	category func(domain.Category, domain.Event) domain.Category
	tag      func(domain.TariffTag, domain.Event) domain.TariffTag
	region   func(domain.Region, domain.Event) domain.Region
	devType  func(domain.DeviceType, domain.Event) domain.DeviceType
	admin    func(domain.Admin, domain.Event) domain.Admin
	networks func(domain.AccountNetworks, domain.Event) domain.AccountNetworks
}

func newEvolvers() evolvers {
	return evolvers{
		account:  domain.AccountDecider().Evolve,
		provider: domain.ProviderDecider().Evolve,
		tariff:   domain.TariffDecider().Evolve,
		channel:  domain.ChannelDecider().Evolve,
		category: domain.CategoryDecider().Evolve,
		tag:      domain.TariffTagDecider().Evolve,
		region:   domain.RegionDecider().Evolve,
		devType:  domain.DeviceTypeDecider().Evolve,
		admin:    domain.AdminDecider().Evolve,
		networks: domain.NetworksDecider().Evolve,
	}
}

// change is one decoded event, ready to apply.
type change struct {
	kind  domain.StreamKind
	id    int64  // from the stream name; admins: 0
	login string // admins: from the stream name
	rev   uint64 // the event's revision in its stream
	pos   uint64 // the event's commit position in the log
	event domain.Event
	at    int64 // unix seconds the event happened (AccountCreated, DeviceBound) or was recorded
}

// Apply implements projections.Handler. It applies each event as the
// domain's Evolve does, one event per acquisition of the write lock.
//
// Apply is idempotent: an event whose revision is at or below the revision
// already applied for its stream (entity) is skipped, as eventhorizon's
// projector does, so a batch delivered twice, or the tail replayed after a
// snapshot that already holds part of it, changes nothing. Deleted accounts
// leave their revision behind for this.
//
// Events of a type the registry does not know are counted (Stats.Skipped)
// and passed over: during a rolling upgrade a newer node may write events
// this one cannot read, and serving slightly stale rows beats serving none.
// Data that does not decode as its registered type is an error: the runner
// logs it and retries, and the model stays at the event before it.
func (m *Model) Apply(ctx context.Context, events iter.Seq[*projections.Event], _ projections.Mode) error {
	m.hold.Lock()
	defer m.hold.Unlock()
	applied := 0
	for ev := range events {
		if applied++; applied%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		c, ok, err := changeOf(ev)
		if err != nil {
			return fmt.Errorf("readmodel: apply %s of %s at revision %d: %w", ev.Type, ev.Stream, ev.Revision, err)
		}
		m.mu.Lock()
		if ok {
			m.st.apply(&m.ev, &c)
		} else if c.kind != 0 {
			m.skipped++
		}
		if ev.Position.After(m.st.pos) {
			m.st.pos = ev.Position
		}
		m.mu.Unlock()
	}
	return nil
}

// changeOf turns a decoded event into a change. ok is false for events the
// model passes over: streams it does not show (the filter keeps them away
// anyway), ignored types and unknown event types (then c.kind is set).
func changeOf(ev *projections.Event) (c change, ok bool, err error) {
	ref := ev.StreamRef
	if !shown(ref.Kind) || ev.Payload == nil && !ev.Unknown && ev.Err == nil {
		return change{}, false, nil // not followed, or an ignored type
	}
	if ev.Err != nil {
		return change{}, false, ev.Err
	}
	c = change{kind: ref.Kind, id: ref.ID, login: ref.Login, rev: ev.Revision, pos: ev.Position.Commit,
		event: ev.Payload, at: ev.Created.Unix()}
	if ev.Unknown {
		return c, false, nil
	}
	if ref.Kind == domain.StreamAccount || ref.Kind == domain.StreamDevice {
		// Their time is shown (created, updated, last online): when it
		// happened, not when it was recorded.
		if !ev.OccurredAt.IsZero() {
			c.at = ev.OccurredAt.Unix()
		}
	}
	return c, true, nil
}

// apply applies one change.
func (s *state) apply(ev *evolvers, c *change) {
	switch c.kind {
	case domain.StreamAccount:
		s.applyAccount(ev.account, c)
	case domain.StreamProvider:
		applyVersioned(s.providers, c.id, c, ev.provider)
	case domain.StreamTariff:
		applyVersioned(s.tariffs, c.id, c, ev.tariff)
	case domain.StreamChannel:
		applyVersioned(s.channels, c.id, c, ev.channel)
	case domain.StreamCategory:
		applyVersioned(s.categories, c.id, c, ev.category)
	case domain.StreamTariffTag:
		applyVersioned(s.tags, c.id, c, ev.tag)
	case domain.StreamRegion:
		applyVersioned(s.regions, c.id, c, ev.region)
	case domain.StreamDeviceType:
		applyVersioned(s.devTypes, c.id, c, ev.devType)
	case domain.StreamAdmin:
		applyVersioned(s.admins, c.login, c, ev.admin)
	case domain.StreamCommand:
		s.applyCommand(c)
	case domain.StreamDevice:
		s.applyDevice(c)
	case domain.StreamNetworks:
		s.applyNetworks(ev.networks, c)
	}
}

// applyVersioned evolves the small entity under key, unless the change is
// not newer than what it already reflects. Deleted entities stay, marked
// Deleted, as their stream's revision must be kept.
func applyVersioned[K comparable, T any](m map[K]versioned[T], key K, c *change, evolve func(T, domain.Event) T) {
	cur, ok := m[key]
	if ok && c.rev <= cur.rev {
		return
	}
	m[key] = versioned[T]{v: evolve(cur.v, c.event), rev: c.rev}
}

// applyAccount evolves an account: the record is turned back into the
// domain's state, evolved by the domain's function and packed again, so the
// model's semantics are the aggregate's by construction.
func (s *state) applyAccount(evolve func(domain.Account, domain.Event) domain.Account, c *change) {
	if t, dead := s.deleted[c.id]; dead {
		t.rev = max(t.rev, c.rev)
		if _, ok := c.event.(domain.AccountErased); ok {
			t.erased = true
		}
		s.deleted[c.id] = t
		return
	}
	old := s.account(c.id)
	if old != nil && c.rev <= old.rev {
		return
	}
	var cur domain.Account
	if old != nil {
		cur = old.toDomain()
	}
	next := evolve(cur, c.event)
	switch {
	case next.Deleted:
		if old != nil {
			s.removeAccount(old)
		}
		s.deleted[c.id] = tombstone{rev: c.rev, provider: next.Provider, at: stampOf(c.at), erased: next.Erased}
		return
	case !next.Exists():
		return // an event before AccountCreated: nothing to show yet
	}
	next.ID = c.id // the stream name is authoritative
	rec := recordOf(next, old, c.at, c.at)
	rec.rev = c.rev
	s.carryActivity(old, rec)
	s.putAccount(old, rec)
}

// carryActivity gives a device that moved here from another account (it
// keeps its id) the activity its old record had: it is the same device.
func (s *state) carryActivity(old, rec *account) {
	for i := range rec.devs {
		d := &rec.devs[i]
		if old != nil && slices.ContainsFunc(old.devs, func(o dev) bool { return o.id == d.id }) {
			continue
		}
		if r, ok := s.devRef(d.id); ok && r.a.id != rec.id {
			if act := r.dev().activity(); act.last != 0 {
				*d = devOf(d.toDomain(), d.created, act)
			}
		}
	}
}
