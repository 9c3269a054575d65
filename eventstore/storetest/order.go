package storetest

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"tvsm/eventstore"
)

var globalOrderTests = []test{
	{"PositionsFollowAppendOrder", testPositionsFollowAppendOrder},
	{"DensePositions", testDensePositions},
	{"Head", testHead},
}

// batchSize returns the number of events of the i-th append of a test: 1-3,
// varied so that streams appended to in turn get different sizes.
func batchSize(i int) int { return []int{1, 2, 3, 1, 3, 2, 2, 1}[i%8] }

// interleave appends to several streams in turn, batches of 1-3 events, and
// returns the appended events in append order with each append's result.
func (e *env) interleave(key string, streams []string, appends int) ([]eventstore.EventData, []eventstore.AppendResult, []int) {
	e.t.Helper()
	var (
		all     []eventstore.EventData
		results []eventstore.AppendResult
		ends    []int // index in all of each append's last event
	)
	next := make(map[string]eventstore.Revision)
	for i := range appends {
		stream := streams[i%len(streams)]
		expect, ok := next[stream]
		if !ok {
			expect = eventstore.NoStream
		}
		evs := e.events(fmt.Sprintf("%s-%d", key, i), fmt.Sprintf("Interleaved%d.v1", i%2), batchSize(i))
		res := e.mustAppend(stream, expect, evs...)
		next[stream] = eventstore.Exact(res.NextExpected)
		all = append(all, evs...)
		results = append(results, res)
		ends = append(ends, len(all)-1)
	}
	return all, results, ends
}

func testPositionsFollowAppendOrder(e *env) {
	streams := []string{e.stream("a"), e.stream("b"), e.stream("c"), e.stream("d")}
	appended, results, ends := e.interleave("order", streams, 12)

	log := e.readAll(streams...)
	if len(log) != len(appended) {
		e.t.Fatalf("streams hold %d events, want %d", len(log), len(appended))
	}
	for i, ev := range log {
		if ev.ID != appended[i].ID {
			e.t.Fatalf("log event %d is %v (%s rev %d), want %v: positions do not follow append order",
				i, ev.ID, ev.Stream, ev.Revision, appended[i].ID)
		}
		if i > 0 && !ev.Position.After(log[i-1].Position) {
			e.t.Fatalf("log event %d at %v not after event %d at %v", i, ev.Position, i-1, log[i-1].Position)
		}
	}
	for i, res := range results {
		if res.Position != log[ends[i]].Position {
			e.t.Errorf("append %d: AppendResult.Position %v, want its last event's %v", i, res.Position, log[ends[i]].Position)
		}
		if res.NextExpected != log[ends[i]].Revision {
			e.t.Errorf("append %d: AppendResult.NextExpected %d, want its last event's revision %d", i, res.NextExpected, log[ends[i]].Revision)
		}
	}

	r := e.subscribe(eventstore.Beginning, eventstore.Filter{StreamPrefixes: []string{e.ns}})
	r.waitEvents(len(log), waitTimeout)
	requireSameEvents(e.t, "subscription", r.events, log)
}

func testDensePositions(e *env) {
	if !e.f.DensePositions {
		e.t.Skip("Features.DensePositions not set")
	}
	e.needEmptyStore()
	streams := []string{e.stream("a"), e.stream("b"), e.stream("c")}
	appended, _, _ := e.interleave("dense", streams, 10)
	log := e.readAll(streams...)
	if len(log) != len(appended) {
		e.t.Fatalf("streams hold %d events, want %d", len(log), len(appended))
	}
	for i, ev := range log {
		want := eventstore.Position{Commit: uint64(i + 1), Prepare: uint64(i + 1)}
		if ev.Position != want {
			e.t.Fatalf("event %d (%s rev %d): Position %v, want %v", i, ev.Stream, ev.Revision, ev.Position, want)
		}
	}
}

// testHead checks HeadReader, for backends that implement it.
func testHead(e *env) {
	hr, ok := e.store.(eventstore.HeadReader)
	if !ok {
		e.t.Skip("the store does not implement eventstore.HeadReader")
	}
	if !e.f.Shared {
		head, err := hr.Head(e.ctx)
		if err != nil || head != eventstore.Beginning {
			e.t.Fatalf("Head of an empty store: %v, %v; want %v", head, err, eventstore.Beginning)
		}
	}
	for i := range 3 {
		res := e.mustAppend(e.stream(fmt.Sprintf("head-%d", i)), eventstore.NoStream, e.events(fmt.Sprintf("head-%d", i), "Head.v1", i+1)...)
		head, err := hr.Head(e.ctx)
		if err != nil {
			e.t.Fatalf("Head: %v", err)
		}
		if e.f.Shared && head.Compare(res.Position) < 0 || !e.f.Shared && head != res.Position {
			e.t.Fatalf("Head after append %d: %v, want the append's Position %v", i, head, res.Position)
		}
	}
}

var concurrencyTests = []test{
	{"SameStreamOneWinnerPerRevision", testOneWinnerPerRevision},
	{"SameStreamRetryLoop", testSameStreamRetryLoop},
	{"DifferentStreams", testDifferentStreams},
}

// testOneWinnerPerRevision releases 16 appends with the same expectation at
// once, round after round: exactly one must win each round, and every loser
// must see the winner's revision.
func testOneWinnerPerRevision(e *env) {
	const writers, rounds = 16, 20
	stream := e.stream("contended")
	before := time.Now()
	want := []eventstore.EventData{e.event("contended-seed", "Seed.v1")}
	e.mustAppend(stream, eventstore.NoStream, want...)

	for round := range uint64(rounds) {
		var (
			wg      sync.WaitGroup
			start   = make(chan struct{})
			evs     = e.events(fmt.Sprintf("round-%d", round), "Contended.v1", writers)
			results = make([]eventstore.AppendResult, writers)
			errs    = make([]error, writers)
		)
		for w := range writers {
			wg.Go(func() {
				<-start
				results[w], errs[w] = e.store.Append(e.ctx, stream, eventstore.Exact(round), evs[w])
			})
		}
		close(start)
		wg.Wait()

		winner := -1
		for w, err := range errs {
			if err == nil {
				if winner >= 0 {
					e.t.Fatalf("round %d: writers %d and %d both appended with Exact(%d)", round, winner, w, round)
				}
				winner = w
				continue
			}
			requireWrongRevision(e.t, err, stream, eventstore.Exact(round), eventstore.Exact(round+1))
		}
		if winner < 0 {
			e.t.Fatalf("round %d: no writer succeeded", round)
		}
		if results[winner].NextExpected != round+1 {
			e.t.Fatalf("round %d: winner's NextExpected %d, want %d", round, results[winner].NextExpected, round+1)
		}
		want = append(want, evs[winner])
	}
	got := e.read(stream, eventstore.Start, 0)
	e.checkRecorded(got, stream, 0, want, before, time.Now())
}

// testSameStreamRetryLoop has 16 writers each append 10 events to one
// stream, retrying on conflict from the revision the error reports, as the
// application's command handler does. Nothing may be lost or duplicated.
func testSameStreamRetryLoop(e *env) {
	const writers, perWriter, maxAttempts = 16, 10, 1000
	stream := e.stream("retry-loop")
	e.mustAppend(stream, eventstore.NoStream, e.event("retry-loop-seed", "Seed.v1"))

	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			expect := eventstore.Exact(0)
			for i, ev := range e.events(fmt.Sprintf("writer-%d", w), "Looped.v1", perWriter) {
				for attempt := 0; ; attempt++ {
					if attempt == maxAttempts {
						errs[w] = fmt.Errorf("event %d: no success in %d attempts", i, maxAttempts)
						return
					}
					res, err := e.store.Append(e.ctx, stream, expect, ev)
					if err == nil {
						expect = eventstore.Exact(res.NextExpected)
						break
					}
					var wre *eventstore.WrongRevisionError
					if !errors.As(err, &wre) {
						errs[w] = fmt.Errorf("event %d: %w", i, err)
						return
					}
					if _, ok := wre.Actual.Exact(); !ok {
						errs[w] = fmt.Errorf("event %d: WrongRevisionError.Actual %v on an existing stream", i, wre.Actual)
						return
					}
					expect = wre.Actual
				}
			}
		})
	}
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			e.t.Fatalf("writer %d: %v", w, err)
		}
	}

	got := e.read(stream, eventstore.Start, 0)
	if len(got) != 1+writers*perWriter {
		e.t.Fatalf("stream holds %d events, want %d", len(got), 1+writers*perWriter)
	}
	// Each writer's events appear once each, in the writer's order.
	pos := make(map[eventstore.EventID]int, len(got))
	for i, ev := range got {
		if ev.Revision != uint64(i) {
			e.t.Fatalf("event %d has revision %d", i, ev.Revision)
		}
		if _, dup := pos[ev.ID]; dup {
			e.t.Fatalf("event %v stored twice", ev.ID)
		}
		pos[ev.ID] = i
	}
	for w := range writers {
		prev := 0
		for i, ev := range e.events(fmt.Sprintf("writer-%d", w), "Looped.v1", perWriter) {
			at, ok := pos[ev.ID]
			if !ok {
				e.t.Fatalf("writer %d event %d lost", w, i)
			}
			if at <= prev {
				e.t.Fatalf("writer %d event %d at revision %d, not after its previous event at %d", w, i, at, prev)
			}
			prev = at
		}
	}
}

// testDifferentStreams has 16 writers append to streams of their own at the
// same time: all succeed, and the log holds each event once.
func testDifferentStreams(e *env) {
	const writers, perWriter = 16, 40
	streams := make([]string, writers)
	for w := range streams {
		streams[w] = e.stream(fmt.Sprintf("parallel-%d", w))
	}
	before := time.Now()
	wait := e.writeConcurrently(streams, "parallel", perWriter)
	if err := wait(); err != nil {
		e.t.Fatal(err)
	}

	for w, stream := range streams {
		got := e.read(stream, eventstore.Start, 0)
		e.checkRecorded(got, stream, 0, e.events(fmt.Sprintf("parallel-%d", w), "Parallel.v1", perWriter), before, time.Now())
	}
	log := e.readAll(streams...)
	for i := 1; i < len(log); i++ {
		if log[i].Position == log[i-1].Position {
			e.t.Fatalf("events %v and %v share position %v", log[i-1].ID, log[i].ID, log[i].Position)
		}
	}
	r := e.subscribe(eventstore.Beginning, eventstore.Filter{StreamPrefixes: []string{e.ns}})
	r.waitEvents(len(log), waitTimeout)
	requireSameEvents(e.t, "subscription", r.events, log)
}

// writeConcurrently starts one goroutine per stream (streams must be new),
// each appending count events of type Parallel.v1 keyed key-<index> in
// batches of 1-5 with exact expectations. wait waits for them and returns the
// first error. The writers stop early when the test ends.
func (e *env) writeConcurrently(streams []string, key string, count int) (wait func() error) {
	var wg sync.WaitGroup
	errs := make([]error, len(streams))
	for w, stream := range streams {
		wg.Go(func() {
			evs := e.events(fmt.Sprintf("%s-%d", key, w), "Parallel.v1", count)
			expect := eventstore.NoStream
			for i, n := 0, 1; i < len(evs); i, n = i+n, n%5+1 {
				batch := evs[i:min(i+n, len(evs))]
				res, err := e.store.Append(e.ctx, stream, expect, batch...)
				if err != nil {
					errs[w] = fmt.Errorf("writer %d, append of events %d..%d to %q: %w", w, i, i+len(batch)-1, stream, err)
					return
				}
				expect = eventstore.Exact(res.NextExpected)
			}
		})
	}
	// If the test fails before calling wait, let the writers finish before
	// the store is closed.
	e.t.Cleanup(wg.Wait)
	return func() error {
		wg.Wait()
		return errors.Join(errs...)
	}
}
