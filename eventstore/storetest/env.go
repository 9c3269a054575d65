package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"tvsm/eventstore"
)

// env is what each test gets: a fresh store and a namespace for its streams
// and event IDs.
type env struct {
	t     *testing.T
	ctx   context.Context
	store eventstore.Store
	f     Features
	// ns prefixes every stream name and event ID key of the test.
	ns string
}

func newEnv(t *testing.T, newStore Factory, f Features) *env {
	t.Helper()
	s := newStore(t)
	if s == nil {
		t.Fatal("storetest: the factory returned a nil store")
	}
	return &env{
		t:     t,
		ctx:   t.Context(),
		store: s,
		f:     f,
		ns:    fmt.Sprintf("st%012x-", rand.Uint64()&(1<<48-1)),
	}
}

// stream returns the name of the test's stream called name.
func (e *env) stream(name string) string { return e.ns + name }

// mine reports whether ev belongs to one of the test's streams.
func (e *env) mine(ev eventstore.RecordedEvent) bool { return strings.HasPrefix(ev.Stream, e.ns) }

// needEmptyStore skips the test when the store may hold foreign events.
func (e *env) needEmptyStore() {
	e.t.Helper()
	if e.f.Shared {
		e.t.Skip("needs an empty store; Features.Shared is set")
	}
}

// events returns n distinct events of type typ. Their IDs derive from the
// test's namespace, key and index, so the same key gives the same events
// again (a retry); different keys give different events.
func (e *env) events(key, typ string, n int) []eventstore.EventData {
	out := make([]eventstore.EventData, n)
	for i := range out {
		out[i] = eventstore.EventData{
			ID:       eventstore.DeriveEventID(e.ns+key, i),
			Type:     typ,
			Data:     fmt.Appendf(nil, `{"key":%q,"i":%d}`, key, i),
			Metadata: fmt.Appendf(nil, `{"test":%q,"key":%q}`, e.ns, key),
		}
	}
	return out
}

// event returns one event (see events).
func (e *env) event(key, typ string) eventstore.EventData { return e.events(key, typ, 1)[0] }

// mustAppend appends and fails the test on error.
func (e *env) mustAppend(stream string, expect eventstore.Revision, evs ...eventstore.EventData) eventstore.AppendResult {
	e.t.Helper()
	res, err := e.store.Append(e.ctx, stream, expect, evs...)
	if err != nil {
		e.t.Fatalf("Append(%q, expect %v, %d events): %v", stream, expect, len(evs), err)
	}
	return res
}

// read reads a stream and fails the test on error.
func (e *env) read(stream string, from eventstore.Revision, max int) []eventstore.RecordedEvent {
	e.t.Helper()
	evs, err := e.store.ReadStream(e.ctx, stream, from, max)
	if err != nil {
		e.t.Fatalf("ReadStream(%q, from %v, max %d): %v", stream, from, max, err)
	}
	return evs
}

// readAll reads whole streams (missing ones count as empty) and returns their
// events in log order: the oracle the subscription tests compare against.
func (e *env) readAll(streams ...string) []eventstore.RecordedEvent {
	e.t.Helper()
	var all []eventstore.RecordedEvent
	for _, s := range streams {
		evs, err := e.store.ReadStream(e.ctx, s, eventstore.Start, 0)
		if errors.Is(err, eventstore.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			e.t.Fatalf("ReadStream(%q): %v", s, err)
		}
		all = append(all, evs...)
	}
	slices.SortFunc(all, func(a, b eventstore.RecordedEvent) int { return a.Position.Compare(b.Position) })
	return all
}

// requireNoStream checks that stream has no events.
func (e *env) requireNoStream(stream string) {
	e.t.Helper()
	evs, err := e.store.ReadStream(e.ctx, stream, eventstore.Start, 0)
	if !errors.Is(err, eventstore.ErrStreamNotFound) {
		e.t.Fatalf("ReadStream(%q) of a stream that must not exist: got %d events, err %v; want ErrStreamNotFound", stream, len(evs), err)
	}
}

// requireStream checks that stream holds exactly want (all fields).
func (e *env) requireStream(stream string, want []eventstore.RecordedEvent) {
	e.t.Helper()
	requireSameEvents(e.t, "stream "+stream, e.read(stream, eventstore.Start, 0), want)
}

// checkRecorded checks events read back against the events appended to
// stream, the first of them at revision first, and that they were recorded
// between notBefore and notAfter.
func (e *env) checkRecorded(got []eventstore.RecordedEvent, stream string, first uint64, want []eventstore.EventData, notBefore, notAfter time.Time) {
	e.t.Helper()
	if len(got) != len(want) {
		e.t.Fatalf("stream %q: got %d events, want %d", stream, len(got), len(want))
	}
	for i, g := range got {
		w := want[i]
		where := fmt.Sprintf("stream %q event %d", stream, i)
		if g.ID != w.ID {
			e.t.Errorf("%s: ID %v, want %v", where, g.ID, w.ID)
		}
		if g.Stream != stream {
			e.t.Errorf("%s: Stream %q, want %q", where, g.Stream, stream)
		}
		if g.Revision != first+uint64(i) {
			e.t.Errorf("%s: Revision %d, want %d", where, g.Revision, first+uint64(i))
		}
		if g.Type != w.Type {
			e.t.Errorf("%s: Type %q, want %q", where, g.Type, w.Type)
		}
		if !bytes.Equal(g.Data, w.Data) {
			e.t.Errorf("%s: Data %q, want %q", where, g.Data, w.Data)
		}
		if !bytes.Equal(g.Metadata, w.Metadata) {
			e.t.Errorf("%s: Metadata %q, want %q", where, g.Metadata, w.Metadata)
		}
		if g.Position.IsZero() {
			e.t.Errorf("%s: zero Position", where)
		}
		if i > 0 && !g.Position.After(got[i-1].Position) {
			e.t.Errorf("%s: Position %v not after the previous event's %v", where, g.Position, got[i-1].Position)
		}
		e.checkCreated(where, g.Created, notBefore, notAfter)
	}
}

// checkCreated checks a recorded time: non-zero, UTC, within the window.
func (e *env) checkCreated(where string, c, notBefore, notAfter time.Time) {
	e.t.Helper()
	switch {
	case c.IsZero():
		e.t.Errorf("%s: zero Created", where)
	case c.Location() != time.UTC:
		e.t.Errorf("%s: Created %v is in %v, want UTC", where, c, c.Location())
	case c.Before(notBefore.Add(-e.f.ClockSkew)) || c.After(notAfter.Add(e.f.ClockSkew)):
		e.t.Errorf("%s: Created %v outside the append's window [%v, %v] ± %v",
			where, c, notBefore.UTC(), notAfter.UTC(), e.f.ClockSkew)
	}
}

// diffEvent describes the first field where got differs from want, or
// returns "" when they are the same.
func diffEvent(got, want eventstore.RecordedEvent) string {
	switch {
	case got.ID != want.ID:
		return fmt.Sprintf("ID %v, want %v", got.ID, want.ID)
	case got.Stream != want.Stream:
		return fmt.Sprintf("Stream %q, want %q", got.Stream, want.Stream)
	case got.Revision != want.Revision:
		return fmt.Sprintf("Revision %d, want %d", got.Revision, want.Revision)
	case got.Position != want.Position:
		return fmt.Sprintf("Position %v, want %v", got.Position, want.Position)
	case got.Type != want.Type:
		return fmt.Sprintf("Type %q, want %q", got.Type, want.Type)
	case !bytes.Equal(got.Data, want.Data):
		return fmt.Sprintf("Data %q, want %q", got.Data, want.Data)
	case !bytes.Equal(got.Metadata, want.Metadata):
		return fmt.Sprintf("Metadata %q, want %q", got.Metadata, want.Metadata)
	case !got.Created.Equal(want.Created):
		return fmt.Sprintf("Created %v, want %v", got.Created, want.Created)
	}
	return ""
}

// requireSameEvents checks that got and want hold the same events, all
// fields equal, in the same order.
func requireSameEvents(t *testing.T, what string, got, want []eventstore.RecordedEvent) {
	t.Helper()
	for i := range min(len(got), len(want)) {
		if d := diffEvent(got[i], want[i]); d != "" {
			t.Fatalf("%s: event %d (of %d delivered, %d expected): %s", what, i, len(got), len(want), d)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%s: got %d events, want %d", what, len(got), len(want))
	}
}

// requireWrongRevision checks that err reports a failed expectation with the
// stream's actual revision.
func requireWrongRevision(t *testing.T, err error, stream string, expect, actual eventstore.Revision) {
	t.Helper()
	if !errors.Is(err, eventstore.ErrWrongExpectedRevision) {
		t.Fatalf("Append(%q, expect %v): err %v, want ErrWrongExpectedRevision", stream, expect, err)
	}
	var wre *eventstore.WrongRevisionError
	if !errors.As(err, &wre) {
		t.Fatalf("Append(%q, expect %v): err %v (%T) is not a *WrongRevisionError", stream, expect, err, err)
	}
	if wre.Stream != stream || wre.Expected != expect || wre.Actual != actual {
		t.Fatalf("Append: WrongRevisionError{Stream %q, Expected %v, Actual %v}, want {%q, %v, %v}",
			wre.Stream, wre.Expected, wre.Actual, stream, expect, actual)
	}
}

// requireErrIs checks that err matches one of targets.
func requireErrIs(t *testing.T, what string, err error, targets ...error) {
	t.Helper()
	for _, target := range targets {
		if errors.Is(err, target) {
			return
		}
	}
	t.Fatalf("%s: err %v, want one of %v", what, err, targets)
}

// lastPosition returns the position of the last event of evs.
func lastPosition(evs []eventstore.RecordedEvent) eventstore.Position {
	if len(evs) == 0 {
		return eventstore.Beginning
	}
	return evs[len(evs)-1].Position
}
