package storetest

import (
	"fmt"
	"sync"
	"time"

	"tvsm/eventstore"
)

var idempotencyTests = []test{
	{"RetryWithSameExpectation", testRetryWithSameExpectation},
	{"RetryWithAny", testRetryWithAny},
	{"RetryEarlierAppend", testRetryEarlierAppend},
	{"ConcurrentRetries", testConcurrentRetries},
	{"SameIDInOtherStream", testSameIDInOtherStream},
	{"SameIDLaterInSameStream", testSameIDLaterInSameStream},
	{"PartialOverlap", testPartialOverlap},
	{"RetryWithOtherExpectation", testRetryWithOtherExpectation},
}

// requireRetry re-appends evs and checks that it is a no-op returning want.
func (e *env) requireRetry(stream string, expect eventstore.Revision, evs []eventstore.EventData, want eventstore.AppendResult) {
	e.t.Helper()
	got, err := e.store.Append(e.ctx, stream, expect, evs...)
	if err != nil {
		e.t.Fatalf("retry of %d events to %q with expect %v: %v; want the original result", len(evs), stream, expect, err)
	}
	if got != want {
		e.t.Fatalf("retry of %d events to %q with expect %v: result %+v, want the original %+v", len(evs), stream, expect, got, want)
	}
}

// requireLog checks that the test's streams hold exactly want, and that a
// subscription to the test's streams delivers exactly want.
func (e *env) requireLog(streams []string, want []eventstore.RecordedEvent) {
	e.t.Helper()
	requireSameEvents(e.t, "streams read back", e.readAll(streams...), want)
	r := e.subscribe(eventstore.Beginning, eventstore.Filter{StreamPrefixes: []string{e.ns}})
	r.waitCaughtUp()
	requireSameEvents(e.t, "subscription", r.events, want)
	r.close()
}

func testRetryWithSameExpectation(e *env) {
	stream := e.stream("retry")
	first := e.events("first", "Retry.v1", 3)
	before := time.Now()
	res1 := e.mustAppend(stream, eventstore.NoStream, first...)
	e.requireRetry(stream, eventstore.NoStream, first, res1)
	e.requireRetry(stream, eventstore.NoStream, first, res1)

	second := e.events("second", "Retry.v1", 2)
	res2 := e.mustAppend(stream, eventstore.Exact(res1.NextExpected), second...)
	e.requireRetry(stream, eventstore.Exact(res1.NextExpected), second, res2)

	single := e.event("single", "Retry.v1")
	res3 := e.mustAppend(stream, eventstore.StreamExists, single)
	e.requireRetry(stream, eventstore.StreamExists, []eventstore.EventData{single}, res3)
	e.requireRetry(stream, eventstore.Exact(res2.NextExpected), []eventstore.EventData{single}, res3)

	log := e.read(stream, eventstore.Start, 0)
	e.checkRecorded(log, stream, 0, append(append(first, second...), single), before, time.Now())
	e.requireLog([]string{stream}, log)
}

func testRetryWithAny(e *env) {
	stream := e.stream("retry-any")
	first := e.events("first", "Retry.v1", 3)
	res1 := e.mustAppend(stream, eventstore.NoStream, first...)
	e.requireRetry(stream, eventstore.Any, first, res1)

	second := e.events("second", "Retry.v1", 2)
	res2 := e.mustAppend(stream, eventstore.Any, second...)
	e.requireRetry(stream, eventstore.Any, second, res2)
	e.requireRetry(stream, eventstore.Exact(res1.NextExpected), second, res2)

	log := e.read(stream, eventstore.Start, 0)
	if len(log) != 5 {
		e.t.Fatalf("stream holds %d events, want 5", len(log))
	}
	e.requireLog([]string{stream}, log)
}

// testRetryEarlierAppend retries an append after later appends to the same
// stream (a client that timed out while others carried on).
func testRetryEarlierAppend(e *env) {
	stream, other := e.stream("earlier"), e.stream("other")
	first := e.events("first", "Retry.v1", 2)
	res1 := e.mustAppend(stream, eventstore.NoStream, first...)
	second := e.events("second", "Retry.v1", 2)
	res2 := e.mustAppend(stream, eventstore.Exact(res1.NextExpected), second...)
	e.mustAppend(stream, eventstore.Exact(res2.NextExpected), e.events("third", "Retry.v1", 2)...)
	e.mustAppend(other, eventstore.NoStream, e.event("other", "Other.v1"))
	log := e.readAll(stream, other)

	e.requireRetry(stream, eventstore.NoStream, first, res1)
	e.requireRetry(stream, eventstore.Any, first, res1)
	e.requireRetry(stream, eventstore.Exact(res1.NextExpected), second, res2)
	e.requireRetry(stream, eventstore.Any, second, res2)
	e.requireLog([]string{stream, other}, log)
}

// testConcurrentRetries sends the same append from 16 goroutines at once:
// all get the same result and the events are stored once.
func testConcurrentRetries(e *env) {
	const senders = 16
	for _, expect := range []eventstore.Revision{eventstore.NoStream, eventstore.Any} {
		stream := e.stream("concurrent-" + expect.String())
		evs := e.events("concurrent-"+expect.String(), "Retry.v1", 3)
		var (
			wg      sync.WaitGroup
			start   = make(chan struct{})
			results = make([]eventstore.AppendResult, senders)
			errs    = make([]error, senders)
		)
		for s := range senders {
			wg.Go(func() {
				<-start
				results[s], errs[s] = e.store.Append(e.ctx, stream, expect, evs...)
			})
		}
		before := time.Now()
		close(start)
		wg.Wait()
		after := time.Now()
		for s := range senders {
			if errs[s] != nil {
				e.t.Fatalf("expect %v: sender %d: %v; want success (a retry)", expect, s, errs[s])
			}
			if results[s] != results[0] {
				e.t.Fatalf("expect %v: sender %d got %+v, sender 0 got %+v", expect, s, results[s], results[0])
			}
		}
		got := e.read(stream, eventstore.Start, 0)
		e.checkRecorded(got, stream, 0, evs, before, after)
		if results[0].Position != got[2].Position || results[0].NextExpected != 2 {
			e.t.Fatalf("expect %v: result %+v, want NextExpected 2 and Position %v", expect, results[0], got[2].Position)
		}
	}
	e.requireLog([]string{e.stream("concurrent-no-stream"), e.stream("concurrent-any")},
		e.readAll(e.stream("concurrent-no-stream"), e.stream("concurrent-any")))
}

func (e *env) needGlobalIDs() {
	e.t.Helper()
	if e.f.StreamScopedIDs {
		e.t.Skip("Features.StreamScopedIDs: the store accepts an event ID again outside a retry")
	}
}

// testSameIDInOtherStream appends an event ID already stored in another
// stream: not a retry, so it fails and appends nothing.
func testSameIDInOtherStream(e *env) {
	e.needGlobalIDs()
	a, b := e.stream("a"), e.stream("b")
	evs := e.events("shared", "Shared.v1", 2)
	e.mustAppend(a, eventstore.NoStream, evs...)
	log := e.readAll(a)

	for _, expect := range []eventstore.Revision{eventstore.NoStream, eventstore.Any} {
		_, err := e.store.Append(e.ctx, b, expect, evs...)
		requireErrIs(e.t, fmt.Sprintf("same events to another stream, expect %v", expect), err,
			eventstore.ErrDuplicateEventID, eventstore.ErrWrongExpectedRevision)
		// Only the second event's ID is taken.
		_, err = e.store.Append(e.ctx, b, expect, e.event("fresh", "Shared.v1"), evs[1])
		requireErrIs(e.t, fmt.Sprintf("one stored ID to another stream, expect %v", expect), err,
			eventstore.ErrDuplicateEventID, eventstore.ErrWrongExpectedRevision)
	}
	e.requireNoStream(b)
	e.requireLog([]string{a, b}, log)
}

// testSameIDLaterInSameStream appends, at the end of a stream, stored event
// IDs alone or mixed with new ones: not a retry, so it fails and appends
// nothing.
func testSameIDLaterInSameStream(e *env) {
	e.needGlobalIDs()
	stream := e.stream("s")
	evs := e.events("s", "Dup.v1", 2)
	res := e.mustAppend(stream, eventstore.NoStream, evs...)
	log := e.readAll(stream)

	cases := [][]eventstore.EventData{
		{evs[0], evs[1]},
		{evs[0]},
		{e.event("new", "Dup.v1"), evs[0]},
		{evs[1], e.event("new", "Dup.v1")},
		{evs[1], evs[0]},
	}
	for i, c := range cases {
		_, err := e.store.Append(e.ctx, stream, eventstore.Exact(res.NextExpected), c...)
		requireErrIs(e.t, fmt.Sprintf("case %d: stored IDs appended again at the end", i), err,
			eventstore.ErrDuplicateEventID, eventstore.ErrWrongExpectedRevision)
	}
	e.requireLog([]string{stream}, log)
}

// testPartialOverlap sends appends that share some IDs with a stored append
// but are not the same append: they fail and append nothing.
func testPartialOverlap(e *env) {
	stream := e.stream("overlap")
	evs := e.events("overlap", "Overlap.v1", 2) // a, b
	e.mustAppend(stream, eventstore.NoStream, evs...)
	log := e.readAll(stream)
	c := e.event("c", "Overlap.v1")

	cases := []struct {
		name   string
		expect eventstore.Revision
		evs    []eventstore.EventData
	}{
		{"stored append plus a new event", eventstore.NoStream, []eventstore.EventData{evs[0], evs[1], c}},
		{"stored append plus a new event, any", eventstore.Any, []eventstore.EventData{evs[0], evs[1], c}},
		{"first stored event then a new one", eventstore.NoStream, []eventstore.EventData{evs[0], c}},
		{"second stored event then a new one", eventstore.Exact(0), []eventstore.EventData{evs[1], c}},
		{"second stored event then a new one, any", eventstore.Any, []eventstore.EventData{evs[1], c}},
	}
	for _, tc := range cases {
		_, err := e.store.Append(e.ctx, stream, tc.expect, tc.evs...)
		requireErrIs(e.t, tc.name, err, eventstore.ErrDuplicateEventID, eventstore.ErrWrongExpectedRevision)
	}
	e.requireLog([]string{stream}, log)
}

// testRetryWithOtherExpectation re-sends stored events, in their stored
// order, with an expectation that would not have put them where they are.
// A repeat is a retry only when its expectation places its events exactly
// where they are stored (EventStoreDB's rule); any other repeat conflicts and
// nothing is stored twice. Re-sending the tail of an append with the
// expectation that places it is a retry and answers where it is.
func testRetryWithOtherExpectation(e *env) {
	stream := e.stream("elsewhere")
	evs := e.events("elsewhere", "Elsewhere.v1", 2)
	e.mustAppend(stream, eventstore.NoStream, evs...)
	log := e.readAll(stream)

	conflicts := []struct {
		expect eventstore.Revision
		evs    []eventstore.EventData
		// holds: expect holds for the stream, so a store that recognises
		// IDs only as retries (StreamScopedIDs) would append them again.
		holds bool
	}{
		{eventstore.Exact(0), evs, false},
		{eventstore.Exact(5), evs, false},
		{eventstore.Exact(1), evs, true},
		{eventstore.StreamExists, evs, true},
		{eventstore.Exact(1), evs[:1], true},
		{eventstore.Exact(1), evs[1:], true},
		{eventstore.NoStream, evs[1:], false},
	}
	for _, c := range conflicts {
		if c.holds && e.f.StreamScopedIDs {
			continue
		}
		_, err := e.store.Append(e.ctx, stream, c.expect, c.evs...)
		requireErrIs(e.t, fmt.Sprintf("re-sending %d stored events with expect %v", len(c.evs), c.expect), err,
			eventstore.ErrDuplicateEventID, eventstore.ErrWrongExpectedRevision)
	}

	res, err := e.store.Append(e.ctx, stream, eventstore.Exact(0), evs[1:]...)
	if err != nil {
		e.t.Fatalf("re-sending the second stored event where it is (expect 0): %v", err)
	}
	if want := (eventstore.AppendResult{NextExpected: log[1].Revision, Position: log[1].Position}); res != want {
		e.t.Fatalf("re-sending the second stored event where it is: %+v, want %+v", res, want)
	}
	e.requireLog([]string{stream}, log)
}
