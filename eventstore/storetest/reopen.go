package storetest

import (
	"errors"
	"fmt"

	"tvsm/eventstore"
)

var reopenTests = []test{
	{"EventsSurvive", testEventsSurviveReopen},
	{"PositionsContinue", testPositionsContinueAfterReopen},
	{"RetryIsNoOp", testRetryAfterReopen},
	{"RevisionsContinue", testRevisionsContinueAfterReopen},
	{"ClosedStoreRejects", testClosedStoreRejects},
}

// appended is one append of the seed, kept so that tests can retry it.
type appended struct {
	stream string
	expect eventstore.Revision
	events []eventstore.EventData
	result eventstore.AppendResult
}

// seed appends to three streams in turn (12 appends) and returns
// the appends and the streams.
func (e *env) seed() ([]appended, []string) {
	e.t.Helper()
	streams := []string{e.stream("a"), e.stream("b"), e.stream("c")}
	var appends []appended
	next := make(map[string]eventstore.Revision)
	for i := range 12 {
		stream := streams[i%len(streams)]
		expect, ok := next[stream]
		if !ok {
			expect = eventstore.NoStream
		}
		evs := e.events(fmt.Sprintf("seed-%d", i), "Seeded.v1", batchSize(i))
		res := e.mustAppend(stream, expect, evs...)
		next[stream] = eventstore.Exact(res.NextExpected)
		appends = append(appends, appended{stream, expect, evs, res})
	}
	return appends, streams
}

// reopen closes the store and opens it again on the same data.
func (e *env) reopen() {
	e.t.Helper()
	if e.f.Reopen == nil {
		e.t.Skip("Features.Reopen not set")
	}
	s := e.f.Reopen(e.t, e.store)
	if s == nil {
		e.t.Fatal("Features.Reopen returned a nil store")
	}
	e.store = s
}

func (e *env) needReopen() {
	e.t.Helper()
	if e.f.Reopen == nil {
		e.t.Skip("Features.Reopen not set")
	}
}

func testEventsSurviveReopen(e *env) {
	e.needReopen()
	_, streams := e.seed()
	before := e.readAll(streams...)
	e.reopen()
	requireSameEvents(e.t, "streams after reopen", e.readAll(streams...), before)

	r := e.subscribe(eventstore.Beginning, eventstore.Filter{})
	r.waitCaughtUp()
	requireSameEvents(e.t, "subscription after reopen", r.events, before)

	// Twice, with appends in between.
	more := e.events("more", "More.v1", 2)
	e.mustAppend(streams[0], eventstore.StreamExists, more...)
	before = e.readAll(streams...)
	r.close()
	e.reopen()
	requireSameEvents(e.t, "streams after the second reopen", e.readAll(streams...), before)
}

func testPositionsContinueAfterReopen(e *env) {
	e.needReopen()
	_, streams := e.seed()
	before := e.readAll(streams...)
	last := lastPosition(before)
	e.reopen()

	fresh := e.stream("fresh")
	r1 := e.mustAppend(fresh, eventstore.NoStream, e.event("fresh", "Fresh.v1"))
	r2 := e.mustAppend(streams[1], eventstore.StreamExists, e.events("continued", "Continued.v1", 2)...)
	if !r1.Position.After(last) {
		e.t.Fatalf("first append after reopen at %v, not after the last event before it at %v", r1.Position, last)
	}
	if !r2.Position.After(r1.Position) {
		e.t.Fatalf("second append after reopen at %v, not after the first at %v", r2.Position, r1.Position)
	}
	if e.f.DensePositions {
		want := eventstore.Position{Commit: last.Commit + 1, Prepare: last.Commit + 1}
		if r1.Position != want {
			e.t.Fatalf("first append after reopen at %v, want %v (dense)", r1.Position, want)
		}
	}

	r := e.subscribe(last, eventstore.Filter{})
	r.waitEvents(3, waitTimeout)
	r.waitCaughtUp()
	requireSameEvents(e.t, "subscription after the pre-reopen head", r.events, e.readAll(append(streams, fresh)...)[len(before):])
}

func testRetryAfterReopen(e *env) {
	e.needReopen()
	appends, streams := e.seed()
	before := e.readAll(streams...)
	e.reopen()

	for i, a := range appends {
		for _, expect := range []eventstore.Revision{a.expect, eventstore.Any} {
			res, err := e.store.Append(e.ctx, a.stream, expect, a.events...)
			if err != nil || res != a.result {
				e.t.Fatalf("retry of append %d after reopen with expect %v: %+v, %v; want the original %+v",
					i, expect, res, err, a.result)
			}
		}
	}
	e.requireLog(streams, before)
}

func testRevisionsContinueAfterReopen(e *env) {
	e.needReopen()
	appends, _ := e.seed()
	e.reopen()

	a := appends[len(appends)-1] // the last append to its stream
	_, err := e.store.Append(e.ctx, a.stream, eventstore.NoStream, e.event("nostream", "After.v1"))
	requireWrongRevision(e.t, err, a.stream, eventstore.NoStream, eventstore.Exact(a.result.NextExpected))
	stale := eventstore.Exact(a.result.NextExpected - 1)
	_, err = e.store.Append(e.ctx, a.stream, stale, e.event("stale", "After.v1"))
	requireWrongRevision(e.t, err, a.stream, stale, eventstore.Exact(a.result.NextExpected))

	res := e.mustAppend(a.stream, eventstore.Exact(a.result.NextExpected), e.events("after", "After.v1", 2)...)
	if res.NextExpected != a.result.NextExpected+2 {
		e.t.Fatalf("append after reopen: NextExpected %d, want %d", res.NextExpected, a.result.NextExpected+2)
	}
	got := e.read(a.stream, eventstore.Exact(a.result.NextExpected+1), 0)
	if len(got) != 2 || got[0].Revision != a.result.NextExpected+1 || got[1].Revision != a.result.NextExpected+2 {
		e.t.Fatalf("events appended after reopen: %d events, want revisions %d and %d", len(got), a.result.NextExpected+1, a.result.NextExpected+2)
	}
}

// testClosedStoreRejects checks the store that Reopen closed: its calls and
// its open subscriptions fail with ErrClosed.
func testClosedStoreRejects(e *env) {
	e.needReopen()
	_, streams := e.seed()
	before := e.readAll(streams...)
	old := e.store
	r := e.subscribe(eventstore.Beginning, eventstore.Filter{})
	r.waitCaughtUp()
	e.reopen()

	if _, err := recvWithin(e.ctx, r.sub, liveTimeout); !errors.Is(err, eventstore.ErrClosed) {
		e.t.Errorf("Recv on a subscription of a closed store: err %v, want ErrClosed", err)
	}
	if _, err := old.Append(e.ctx, streams[0], eventstore.Any, e.event("late", "Late.v1")); !errors.Is(err, eventstore.ErrClosed) {
		e.t.Errorf("Append on a closed store: err %v, want ErrClosed", err)
	}
	if _, err := old.ReadStream(e.ctx, streams[0], eventstore.Start, 0); !errors.Is(err, eventstore.ErrClosed) {
		e.t.Errorf("ReadStream on a closed store: err %v, want ErrClosed", err)
	}
	sub, err := old.SubscribeAll(e.ctx, eventstore.Beginning, eventstore.Filter{})
	if err == nil {
		// Failing on the first Recv is as good as failing at once.
		_, err = recvWithin(e.ctx, sub, liveTimeout)
		_ = sub.Close()
	}
	if !errors.Is(err, eventstore.ErrClosed) {
		e.t.Errorf("SubscribeAll on a closed store: err %v, want ErrClosed", err)
	}
	// The late append did not land.
	requireSameEvents(e.t, "streams after reopen", e.readAll(streams...), before)
}
