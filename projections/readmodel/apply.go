package readmodel

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/projections"
)

// kind is the aggregate a stream belongs to.
type kind uint8

const (
	kindAccount kind = iota + 1
	kindProvider
	kindTariff
	kindChannel
	kindCategory
	kindAdmin
	// kindCommand and kindDevice are followed for device authorisation:
	// `update` commands drop it, and connections stamp a device's last
	// connection time.
	kindCommand
	kindDevice
)

// streamKinds are the stream name prefixes of the aggregates the model
// shows, taken from the domain's stream helpers.
var streamKinds = []struct {
	prefix string
	kind   kind
}{
	{idPrefix(domain.AccountStream), kindAccount},
	{idPrefix(domain.ProviderStream), kindProvider},
	{idPrefix(domain.TariffStream), kindTariff},
	{idPrefix(domain.ChannelStream), kindChannel},
	{idPrefix(domain.CategoryStream), kindCategory},
	{domain.AdminStream(""), kindAdmin},
	{idPrefix(domain.CommandStream), kindCommand},
	{idPrefix(domain.DeviceStream), kindDevice},
}

// ignoredTypes are the event types the model has no use for: most of the
// command and device streams, and journal events (domain.JournalEventTypes)
// in account streams.
// The filter keeps them away (a device's viewing reports above all: they
// are the bulk of the log), and Apply passes over them should one arrive
// anyway.
var ignoredTypes = append([]string{
	domain.CommandsSentType, domain.CommandExpiredType, domain.CommandsAckedType, domain.CommandsConfirmedType,
	domain.DeviceDisconnectedType, domain.ViewingReportedType,
}, domain.JournalEventTypes()...)

// typeFamily returns an event type name without its version: the prefix
// that matches every version of it ("AccountCreated." for
// "AccountCreated.v1"), so that old versions read through upcasters pass
// the filter too.
func typeFamily(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[:i+1]
	}
	return name
}

// ignored reports whether events of type name are passed over.
func ignored(name string) bool {
	family := typeFamily(name)
	for _, t := range ignoredTypes {
		if typeFamily(t) == family {
			return true
		}
	}
	return false
}

// idPrefix returns what stream puts before an id: "account-" for
// domain.AccountStream.
func idPrefix(stream func(int64) string) string {
	return strings.TrimSuffix(stream(0), "0")
}

// evolvers are the domain's evolve functions: the model applies events
// exactly as the aggregates do.
type evolvers struct {
	account  func(domain.Account, domain.Event) domain.Account
	provider func(domain.Provider, domain.Event) domain.Provider
	tariff   func(domain.Tariff, domain.Event) domain.Tariff
	channel  func(domain.Channel, domain.Event) domain.Channel
	category func(domain.Category, domain.Event) domain.Category
	admin    func(domain.Admin, domain.Event) domain.Admin
}

func newEvolvers() evolvers {
	return evolvers{
		account:  domain.AccountDecider().Evolve,
		provider: domain.ProviderDecider().Evolve,
		tariff:   domain.TariffDecider().Evolve,
		channel:  domain.ChannelDecider().Evolve,
		category: domain.CategoryDecider().Evolve,
		admin:    domain.AdminDecider().Evolve,
	}
}

// change is one decoded event, ready to apply.
type change struct {
	kind  kind
	id    int64  // from the stream name; admins: 0
	login string // admins: from the stream name
	rev   uint64 // the event's revision in its stream
	pos   uint64 // the event's commit position in the log
	event domain.Event
	at    int64 // unix seconds the event happened (AccountCreated, DeviceBound) or was recorded
}

// Apply implements projections.Handler. It decodes each event with the
// registry and applies it as the domain's Evolve does, one event per
// acquisition of the write lock.
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
//
// A long batch (a replay) is decoded ahead on every core
// (projections.DecodeAhead) while it is applied in order.
func (m *Model) Apply(ctx context.Context, events []eventstore.RecordedEvent, _ projections.Mode) error {
	applied := 0
	return projections.DecodeAhead(events, m.decodeChange, func(ev *eventstore.RecordedEvent, d decodedChange) error {
		if applied++; applied%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		m.mu.Lock()
		if d.ok {
			m.st.apply(&m.ev, &d.c)
		} else if d.c.kind != 0 {
			m.skipped++
		}
		if ev.Position.After(m.st.pos) {
			m.st.pos = ev.Position
		}
		m.mu.Unlock()
		return nil
	})
}

// decodedChange is what decodeChange made of an event.
type decodedChange struct {
	c  change
	ok bool
}

func (m *Model) decodeChange(ev *eventstore.RecordedEvent) (decodedChange, error) {
	c, ok, err := m.decode(ev)
	if err != nil {
		return decodedChange{}, fmt.Errorf("readmodel: apply %s of %s at revision %d: %w", ev.Type, ev.Stream, ev.Revision, err)
	}
	return decodedChange{c, ok}, nil
}

// decode turns a recorded event into a change. ok is false for events the
// model passes over: streams it does not show (the filter keeps them away
// anyway) and unknown event types (then c.kind is set).
func (m *Model) decode(ev *eventstore.RecordedEvent) (c change, ok bool, err error) {
	c.kind, c.id, c.login, ok = parseStream(ev.Stream)
	if !ok || ignored(ev.Type) {
		return change{}, false, nil
	}
	c.rev = ev.Revision
	c.pos = ev.Position.Commit
	c.at = ev.Created.Unix()
	c.event, err = m.reg.Decode(ev.Type, ev.Data)
	if errors.Is(err, domain.ErrUnknownEventType) {
		return c, false, nil
	}
	if err != nil {
		return change{}, false, err
	}
	switch c.event.(type) {
	case domain.AccountCreated, domain.DeviceBound, domain.DeviceConnected:
		// Their time is shown (created, last connected); take it from the metadata, which
		// says when it happened, falling back to when it was recorded.
		if md, err := domain.DecodeMetadata(ev.Metadata); err == nil {
			c.at = md.OccurredAt.Unix()
		}
	}
	return c, true, nil
}

// parseStream returns the aggregate of a stream and the id or login in its
// name; ok is false for streams the model does not show.
func parseStream(stream string) (k kind, id int64, login string, ok bool) {
	for _, sk := range streamKinds {
		rest, found := strings.CutPrefix(stream, sk.prefix)
		if !found {
			continue
		}
		if sk.kind == kindAdmin {
			return sk.kind, 0, rest, rest != ""
		}
		n, err := strconv.ParseInt(rest, 10, 64)
		if err != nil || n <= 0 {
			return 0, 0, "", false
		}
		return sk.kind, n, "", true
	}
	return 0, 0, "", false
}

// apply applies one change.
func (s *state) apply(ev *evolvers, c *change) {
	switch c.kind {
	case kindAccount:
		s.applyAccount(ev.account, c)
	case kindProvider:
		applyVersioned(s.providers, c.id, c, ev.provider)
	case kindTariff:
		applyVersioned(s.tariffs, c.id, c, ev.tariff)
	case kindChannel:
		applyVersioned(s.channels, c.id, c, ev.channel)
	case kindCategory:
		applyVersioned(s.categories, c.id, c, ev.category)
	case kindAdmin:
		applyVersioned(s.admins, c.login, c, ev.admin)
	case kindCommand:
		s.applyCommand(c)
	case kindDevice:
		s.applyDevice(c)
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
		s.deleted[c.id] = t
		return
	}
	old := s.accounts[c.id]
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
		s.deleted[c.id] = tombstone{rev: c.rev, provider: next.Provider}
		return
	case !next.Exists():
		return // an event before AccountCreated: nothing to show yet
	}
	next.ID = c.id // the stream name is authoritative
	rec := recordOf(next, old, c.at, c.at)
	rec.rev = c.rev
	s.putAccount(old, rec)
}
