package storetest

import (
	"errors"

	"tvsm/eventstore"
)

// tombstoneTests check eventstore.Tombstoner on the stores that implement
// it; on the others each test is skipped, saying so.
var tombstoneTests = []test{
	{"ReadAndAppendRefused", testTombstoneRefusesReadAndAppend},
	{"InvalidName", testTombstoneInvalidName},
	{"MultiAppendRefused", testTombstoneRefusesMultiAppend},
	{"Subscription", testTombstoneSubscription},
	{"SurvivesReopen", testTombstoneSurvivesReopen},
}

// tombstoner returns the store as a Tombstoner, or skips the test.
func (e *env) tombstoner() eventstore.Tombstoner {
	e.t.Helper()
	ts, ok := e.store.(eventstore.Tombstoner)
	if !ok {
		e.t.Skipf("%T does not implement eventstore.Tombstoner: it cannot delete a stream", e.store)
	}
	return ts
}

// mustTombstone tombstones stream and fails the test on error.
func (e *env) mustTombstone(stream string) {
	e.t.Helper()
	if err := e.tombstoner().Tombstone(e.ctx, stream); err != nil {
		e.t.Fatalf("Tombstone(%q): %v", stream, err)
	}
}

// head returns the store's head, and false when it cannot tell it or the
// store is shared (others move the head).
func (e *env) head() (eventstore.Position, bool) {
	e.t.Helper()
	hr, ok := e.store.(eventstore.HeadReader)
	if !ok || e.f.Shared {
		return eventstore.Position{}, false
	}
	p, err := hr.Head(e.ctx)
	if err != nil {
		e.t.Fatalf("Head: %v", err)
	}
	return p, true
}

// requireDeleted checks that stream is tombstoned: reads fail with
// ErrStreamDeleted, and so do appends with every kind of expectation, a
// retry of the stream's earlier appends included, without storing
// anything (the head does not move).
func (e *env) requireDeleted(stream string, earlier ...appended) {
	e.t.Helper()
	head, haveHead := e.head()
	for _, from := range []eventstore.Revision{eventstore.Start, eventstore.Exact(1)} {
		evs, err := e.store.ReadStream(e.ctx, stream, from, 0)
		if !errors.Is(err, eventstore.ErrStreamDeleted) {
			e.t.Fatalf("ReadStream(%q, from %v) of a tombstoned stream: %d events, err %v; want ErrStreamDeleted", stream, from, len(evs), err)
		}
	}
	for i, expect := range []eventstore.Revision{
		eventstore.Any, eventstore.NoStream, eventstore.StreamExists, eventstore.Exact(0), eventstore.Exact(2),
	} {
		_, err := e.store.Append(e.ctx, stream, expect, e.events("after-tombstone-"+stream, "After.v1", i+1)...)
		if !errors.Is(err, eventstore.ErrStreamDeleted) {
			e.t.Fatalf("Append(%q, expect %v) to a tombstoned stream: err %v; want ErrStreamDeleted", stream, expect, err)
		}
	}
	for _, a := range earlier {
		for _, expect := range []eventstore.Revision{a.expect, eventstore.Any} {
			if _, err := e.store.Append(e.ctx, stream, expect, a.events...); !errors.Is(err, eventstore.ErrStreamDeleted) {
				e.t.Fatalf("retry (expect %v) of an append made before the tombstone of %q: err %v; want ErrStreamDeleted", expect, stream, err)
			}
		}
	}
	if haveHead {
		if now, _ := e.head(); now != head {
			e.t.Fatalf("head moved from %v to %v: an append refused for a tombstone stored something", head, now)
		}
	}
}

// testTombstoneRefusesReadAndAppend tombstones a stream with events and
// one without, twice each: both are refused from then on, the second
// tombstone is a no-op, and other streams are untouched.
func testTombstoneRefusesReadAndAppend(e *env) {
	e.tombstoner()
	gone, missing, other := e.stream("gone"), e.stream("missing"), e.stream("other")
	first := appended{stream: gone, expect: eventstore.NoStream, events: e.events("gone", "Gone.v1", 3)}
	first.result = e.mustAppend(gone, first.expect, first.events...)
	otherEvents := e.events("other", "Other.v1", 2)
	e.mustAppend(other, eventstore.NoStream, otherEvents...)
	otherBefore := e.read(other, eventstore.Start, 0)

	for range 2 {
		e.mustTombstone(gone)
		e.mustTombstone(missing)
	}
	e.requireDeleted(gone, first)
	e.requireDeleted(missing)

	requireSameEvents(e.t, "an untouched stream", e.read(other, eventstore.Start, 0), otherBefore)
	res := e.mustAppend(other, eventstore.Exact(1), e.event("other-more", "Other.v1"))
	if res.NextExpected != 2 {
		e.t.Fatalf("append to an untouched stream after a tombstone: NextExpected %d, want 2", res.NextExpected)
	}
	e.requireNoStream(e.stream("never")) // a missing stream is still just missing
}

func testTombstoneInvalidName(e *env) {
	ts := e.tombstoner()
	for _, stream := range []string{"", "$system-" + e.ns, "nul\x00" + e.ns} {
		if err := ts.Tombstone(e.ctx, stream); !errors.Is(err, eventstore.ErrInvalidAppend) {
			e.t.Errorf("Tombstone(%q): err %v; want ErrInvalidAppend", stream, err)
		}
	}
}

// testTombstoneRefusesMultiAppend: a multi-stream append with a part for a
// tombstoned stream fails as a whole, and writes none of its parts.
func testTombstoneRefusesMultiAppend(e *env) {
	e.tombstoner()
	if !e.f.MultiAppend {
		e.t.Skip("Features.MultiAppend not set")
	}
	gone, fresh := e.stream("gone"), e.stream("fresh")
	e.mustAppend(gone, eventstore.NoStream, e.events("gone", "Gone.v1", 2)...)
	e.mustTombstone(gone)
	head, haveHead := e.head()
	for _, parts := range [][]eventstore.StreamAppend{
		{e.part("fresh", eventstore.NoStream, "fresh-1", 1), e.part("gone", eventstore.Any, "gone-1", 1)},
		{e.part("gone", eventstore.Exact(1), "gone-2", 2), e.part("fresh", eventstore.Any, "fresh-2", 1)},
	} {
		if _, err := e.multi().AppendMulti(e.ctx, parts...); !errors.Is(err, eventstore.ErrStreamDeleted) {
			e.t.Fatalf("AppendMulti(%s) with a part for a tombstoned stream: err %v; want ErrStreamDeleted", describeParts(parts), err)
		}
	}
	e.requireNoStream(fresh)
	if haveHead {
		if now, _ := e.head(); now != head {
			e.t.Fatalf("head moved from %v to %v: a refused multi-stream append stored something", head, now)
		}
	}
}

// testTombstoneSubscription: subscriptions go on across a tombstone. What
// they deliver of the tombstoned stream is at most its events as they were
// stored (backends differ: see eventstore.Tombstoner), never anything
// else of it; the other streams' events all arrive, and so do live ones.
func testTombstoneSubscription(e *env) {
	e.tombstoner()
	gone, other := e.stream("gone"), e.stream("other")
	e.mustAppend(other, eventstore.NoStream, e.event("before", "Other.v1"))
	e.mustAppend(gone, eventstore.NoStream, e.events("gone", "Gone.v1", 3)...)
	stored := e.read(gone, eventstore.Start, 0)

	live := e.subscribe(eventstore.Beginning, eventstore.Filter{})
	live.waitCaughtUp()
	e.mustTombstone(gone)
	after := e.event("after", "Other.v1")
	e.mustAppend(other, eventstore.Exact(0), after)
	live.waitFor(after.ID, liveTimeout)

	fresh := e.subscribe(eventstore.Beginning, eventstore.Filter{})
	fresh.waitCaughtUp()
	only := e.subscribe(eventstore.Beginning, eventstore.Filter{StreamPrefixes: []string{gone}})
	only.waitCaughtUp()

	want := e.read(other, eventstore.Start, 0)
	for name, r := range map[string]*reader{"live": live, "fresh": fresh, "filtered on the tombstoned stream": only} {
		var others []eventstore.RecordedEvent
		for _, ev := range r.events {
			if ev.Stream != gone {
				others = append(others, ev)
				continue
			}
			if !isStored(ev, stored) {
				e.t.Fatalf("subscription %s delivered %s rev %d (%s at %v), not an event the stream held before its tombstone",
					name, ev.Stream, ev.Revision, ev.Type, ev.Position)
			}
		}
		if r == only {
			if len(others) != 0 {
				e.t.Fatalf("subscription %s delivered %d events of other streams", name, len(others))
			}
			continue
		}
		requireSameEvents(e.t, "subscription "+name+", other streams", others, want)
	}
}

// isStored reports whether ev is one of stored, all fields equal.
func isStored(ev eventstore.RecordedEvent, stored []eventstore.RecordedEvent) bool {
	for _, s := range stored {
		if diffEvent(ev, s) == "" {
			return true
		}
	}
	return false
}

// testTombstoneSurvivesReopen: a tombstone holds after the store is opened
// again, and the closed store refuses to tombstone.
func testTombstoneSurvivesReopen(e *env) {
	e.tombstoner()
	e.needReopen()
	gone, missing, other := e.stream("gone"), e.stream("missing"), e.stream("other")
	first := appended{stream: gone, expect: eventstore.NoStream, events: e.events("gone", "Gone.v1", 2)}
	first.result = e.mustAppend(gone, first.expect, first.events...)
	e.mustAppend(other, eventstore.NoStream, e.event("other", "Other.v1"))
	e.mustTombstone(gone)
	e.mustTombstone(missing)
	otherBefore := e.read(other, eventstore.Start, 0)
	old := e.store.(eventstore.Tombstoner)

	e.reopen()
	e.requireDeleted(gone, first)
	e.requireDeleted(missing)
	e.mustTombstone(gone)
	requireSameEvents(e.t, "an untouched stream after reopen", e.read(other, eventstore.Start, 0), otherBefore)
	e.mustAppend(other, eventstore.Exact(0), e.event("other-more", "Other.v1"))
	if err := old.Tombstone(e.ctx, other); !errors.Is(err, eventstore.ErrClosed) {
		e.t.Fatalf("Tombstone on a closed store: err %v; want ErrClosed", err)
	}
	e.mustAppend(other, eventstore.Exact(1), e.event("other-last", "Other.v1"))
}
