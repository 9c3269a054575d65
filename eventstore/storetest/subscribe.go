package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"tvsm/eventstore"
)

var subscribeTests = []test{
	{"FromBeginning", testSubscribeFromBeginning},
	{"CaughtUpOnEmptyStore", testCaughtUpOnEmptyStore},
	{"AfterIsExclusive", testAfterIsExclusive},
	{"CatchUpToLiveHandover", testCatchUpToLiveHandover},
	{"LiveDelivery", testLiveDelivery},
	{"LiveBatchAtHeadSaysNoMore", testLiveBatchAtHeadSaysNoMore},
}

func testSubscribeFromBeginning(e *env) {
	streams := []string{e.stream("a"), e.stream("b"), e.stream("c")}
	e.interleave("beginning", streams, 30)
	log := e.readAll(streams...)

	r := e.subscribe(eventstore.Beginning, eventstore.Filter{})
	r.waitCaughtUp()
	requireSameEvents(e.t, "subscription from the beginning", r.events, log)
	if r.checkpoint.Compare(lastPosition(log)) < 0 {
		e.t.Errorf("caught-up Checkpoint %v before the last event at %v", r.checkpoint, lastPosition(log))
	}
}

func testCaughtUpOnEmptyStore(e *env) {
	e.needEmptyStore()
	r := e.subscribe(eventstore.Beginning, eventstore.Filter{})
	r.waitCaughtUp()
	if len(r.events) != 0 {
		e.t.Fatalf("empty store delivered %d events", len(r.events))
	}
	ev := e.event("first", "First.v1")
	e.mustAppend(e.stream("first"), eventstore.NoStream, ev)
	r.waitFor(ev.ID, liveTimeout)
	requireSameEvents(e.t, "subscription", r.events, e.read(e.stream("first"), eventstore.Start, 0))
}

func testAfterIsExclusive(e *env) {
	streams := []string{e.stream("a"), e.stream("b")}
	e.interleave("exclusive", streams, 6)
	log := e.readAll(streams...)

	for _, k := range []int{0, 1, len(log) / 2, len(log) - 2} {
		r := e.subscribe(log[k].Position, eventstore.Filter{})
		r.waitCaughtUp()
		requireSameEvents(e.t, fmt.Sprintf("subscription after event %d", k), r.events, log[k+1:])
		r.close()
	}

	// After the last event: nothing old, then the next event.
	r := e.subscribe(lastPosition(log), eventstore.Filter{})
	r.waitCaughtUp()
	if len(r.events) != 0 {
		e.t.Fatalf("subscription after the last event delivered %d old events, first %v at %v",
			len(r.events), r.events[0].ID, r.events[0].Position)
	}
	next := e.event("next", "Next.v1")
	e.mustAppend(streams[0], eventstore.StreamExists, next)
	r.waitFor(next.ID, liveTimeout)
	stored := e.read(streams[0], eventstore.Start, 0)
	requireSameEvents(e.t, "subscription after the last event", r.events, stored[len(stored)-1:])
}

// testCatchUpToLiveHandover subscribes in the middle of a few hundred stored
// events while writers append 2000 more, so the subscription hands over from
// catch-up to live while the log grows. It must deliver exactly the log after
// the start position: no gap, no duplicate, in order.
func testCatchUpToLiveHandover(e *env) {
	pre := []string{e.stream("pre-0"), e.stream("pre-1"), e.stream("pre-2")}
	if err := e.writeConcurrently(pre, "pre", 100)(); err != nil {
		e.t.Fatal(err)
	}
	preLog := e.readAll(pre...)
	after := preLog[99].Position

	live := []string{e.stream("live-0"), e.stream("live-1"), e.stream("live-2"), e.stream("live-3")}
	wait := e.writeConcurrently(live, "live", 500)
	r := e.subscribe(after, eventstore.Filter{})
	r.waitEvents(200+2000, waitTimeout)
	if err := wait(); err != nil {
		e.t.Fatal(err)
	}
	r.waitCaughtUp()

	// A sentinel appended after caught-up arrives promptly and right after
	// the rest: nothing more was delivered.
	sentinel := e.event("sentinel", "Sentinel.v1")
	e.mustAppend(e.stream("sentinel"), eventstore.NoStream, sentinel)
	r.waitFor(sentinel.ID, liveTimeout)

	want := e.readAll(append(append(pre, live...), e.stream("sentinel"))...)[100:]
	if len(want) != 200+2000+1 {
		e.t.Fatalf("streams hold %d events after the start position, want %d", len(want), 200+2000+1)
	}
	requireSameEvents(e.t, "subscription", r.events, want)
}

// testLiveDelivery appends, one after another, events to a caught-up
// subscription: each arrives within liveTimeout.
func testLiveDelivery(e *env) {
	stream := e.stream("live")
	e.mustAppend(stream, eventstore.NoStream, e.events("stored", "Stored.v1", 5)...)
	r := e.subscribe(eventstore.Beginning, eventstore.Filter{})
	r.waitCaughtUp()
	r.waitEvents(5, waitTimeout)

	for i := range 5 {
		evs := e.events(fmt.Sprintf("live-%d", i), "Live.v1", i+1)
		target := stream
		if i%2 == 1 {
			target = e.stream(fmt.Sprintf("new-%d", i))
		}
		start := time.Now()
		e.mustAppend(target, eventstore.Any, evs...)
		r.waitFor(evs[len(evs)-1].ID, liveTimeout)
		if d := time.Since(start); d > time.Second {
			e.t.Logf("live event %d took %v to arrive", i, d)
		}
	}
	want := e.readAll(stream, e.stream("new-1"), e.stream("new-3"))
	requireSameEvents(e.t, "subscription", r.events, want)
}

// testLiveBatchAtHeadSaysNoMore: the live batch that delivers the last
// event appended is not marked More (a consumer pacing its live batches
// would otherwise skip its wait with nothing to read), unless someone else
// appended after it.
func testLiveBatchAtHeadSaysNoMore(e *env) {
	r := e.subscribe(eventstore.Beginning, eventstore.Filter{})
	r.waitCaughtUp()
	for i := range 3 {
		evs := e.events(fmt.Sprintf("more-%d", i), "More.v1", i+2)
		e.mustAppend(e.stream(fmt.Sprintf("more-%d", i)), eventstore.NoStream, evs...)
		r.waitFor(evs[len(evs)-1].ID, liveTimeout)
		if !r.more {
			continue
		}
		if h, ok := e.store.(eventstore.HeadReader); ok {
			if head, err := h.Head(e.ctx); err == nil && head.After(r.checkpoint) {
				continue // another writer's events came after ours
			}
		}
		e.t.Fatalf("append %d: the batch that reached the head at %v says More", i, r.checkpoint)
	}
}

// filterFixture is the events of the filter tests: one per (stream, type)
// pair, appended in this order.
var filterFixture = []struct{ stream, typ string }{
	{"order-1", "OrderPlaced.v1"},
	{"user-1", "UserCreated.v1"},
	{"order-2", "OrderPlaced.v1"},
	{"audit", "AuditLogged.v1"},
	{"order-1", "OrderShipped.v1"},
	{"user-1", "OrderPlaced.v1"},
	{"audit", "UserCreated.v1"},
	{"order-10", "OrderShipped.v1"},
	{"orders", "OrderCancelled.v1"},
	{"user-2", "UserRenamed.v1"},
}

// appendFixture appends filterFixture with event IDs keyed by key and
// returns the streams it wrote to.
func (e *env) appendFixture(key string) []string {
	e.t.Helper()
	var streams []string
	for i, p := range filterFixture {
		stream := e.stream(p.stream)
		e.mustAppend(stream, eventstore.Any, e.event(fmt.Sprintf("%s-%d", key, i), p.typ))
		if !slices.Contains(streams, stream) {
			streams = append(streams, stream)
		}
	}
	return streams
}

type filterCase struct {
	name   string
	filter func(ns string) eventstore.Filter
	// want selects the expected events by stream name (without the test's
	// prefix) and type; written out rather than derived from Filter.Match.
	want func(stream, typ string) bool
	// sentinel is an event that passes the filter, appended last.
	sentinelStream, sentinelType string
}

var filterCases = []filterCase{
	{
		name:   "StreamPrefix",
		filter: func(ns string) eventstore.Filter { return eventstore.Filter{StreamPrefixes: []string{ns + "order-"}} },
		want: func(stream, _ string) bool {
			return stream == "order-1" || stream == "order-2" || stream == "order-10" || stream == "order-sentinel"
		},
		sentinelStream: "order-sentinel", sentinelType: "Sentinel.v1",
	},
	{
		name:   "EventTypePrefix",
		filter: func(string) eventstore.Filter { return eventstore.Filter{EventTypePrefixes: []string{"OrderPlaced"}} },
		want: func(_, typ string) bool {
			return typ == "OrderPlaced.v1" || typ == "OrderPlacedSentinel.v1"
		},
		sentinelStream: "sentinel", sentinelType: "OrderPlacedSentinel.v1",
	},
	{
		name: "SeveralPrefixes",
		filter: func(ns string) eventstore.Filter {
			return eventstore.Filter{StreamPrefixes: []string{ns + "audit", ns + "order-2", ns + "sentinel"}}
		},
		want: func(stream, _ string) bool {
			return stream == "audit" || stream == "order-2" || stream == "sentinel"
		},
		sentinelStream: "sentinel", sentinelType: "Sentinel.v1",
	},
	{
		name: "StreamAndTypePrefixes",
		filter: func(ns string) eventstore.Filter {
			return eventstore.Filter{
				StreamPrefixes:    []string{ns + "order-", ns + "user-"},
				EventTypePrefixes: []string{"OrderPlaced", "UserCreated"},
			}
		},
		want: func(stream, typ string) bool {
			return (strings.HasPrefix(stream, "order-") || strings.HasPrefix(stream, "user-")) &&
				(typ == "OrderPlaced.v1" || typ == "UserCreated.v1")
		},
		sentinelStream: "user-sentinel", sentinelType: "UserCreated.v1",
	},
}

var filterTests = append(filterTestsFromCases(), test{"CheckpointPassesFilteredEvents", testCheckpointPassesFilteredEvents})

func filterTestsFromCases() []test {
	var tests []test
	for _, c := range filterCases {
		tests = append(tests, test{c.name, func(e *env) { testFilter(e, c) }})
	}
	return tests
}

// testFilter checks a filter on stored events (catch-up) and on events
// appended after the subscription caught up (live).
func testFilter(e *env, c filterCase) {
	streams := e.appendFixture("stored")
	sentinelStream := e.stream(c.sentinelStream)
	streams = append(streams, sentinelStream)
	selected := func(log []eventstore.RecordedEvent) []eventstore.RecordedEvent {
		var out []eventstore.RecordedEvent
		for _, ev := range log {
			if c.want(strings.TrimPrefix(ev.Stream, e.ns), ev.Type) {
				out = append(out, ev)
			}
		}
		return out
	}

	r := e.subscribe(eventstore.Beginning, c.filter(e.ns))
	r.waitCaughtUp()
	want := selected(e.readAll(streams...))
	if len(want) == 0 {
		e.t.Fatal("the fixture selects no event; the test is wrong")
	}
	requireSameEvents(e.t, "catch-up", r.events, want)

	e.appendFixture("live")
	sentinel := e.event("sentinel", c.sentinelType)
	e.mustAppend(sentinelStream, eventstore.Any, sentinel)
	r.waitFor(sentinel.ID, liveTimeout)
	requireSameEvents(e.t, "catch-up and live", r.events, selected(e.readAll(streams...)))
}

// testCheckpointPassesFilteredEvents subscribes with a filter that selects
// none of the stored events: the caught-up Checkpoint must still be at the
// head, so that resuming after it delivers nothing old.
func testCheckpointPassesFilteredEvents(e *env) {
	streams := e.appendFixture("stored")
	last := lastPosition(e.readAll(streams...))

	r := e.subscribe(eventstore.Beginning, eventstore.Filter{StreamPrefixes: []string{e.ns + "nothing-"}})
	r.waitCaughtUp()
	if len(r.events) != 0 {
		e.t.Fatalf("filter selecting nothing delivered %d events", len(r.events))
	}
	if r.checkpoint.Compare(last) < 0 {
		e.t.Fatalf("caught-up Checkpoint %v is before the last (filtered) event at %v", r.checkpoint, last)
	}
	r.close()

	// Resume without a filter after the checkpoint: the first event is new.
	resumed := e.subscribe(r.checkpoint, eventstore.Filter{})
	fresh := e.event("fresh", "Fresh.v1")
	e.mustAppend(e.stream("fresh"), eventstore.NoStream, fresh)
	resumed.waitFor(fresh.ID, liveTimeout)
	requireSameEvents(e.t, "resumed after the checkpoint", resumed.events, e.read(e.stream("fresh"), eventstore.Start, 0))
}

var lifecycleTests = []test{
	{"RecvReturnsOnCancel", func(e *env) { testRecvContextEnds(e, true) }},
	{"RecvReturnsOnDeadline", func(e *env) { testRecvContextEnds(e, false) }},
	{"SubscribeContextEndsSubscription", testSubscribeContextEnds},
	{"RecvAfterClose", testRecvAfterClose},
	{"CloseUnblocksRecv", testCloseUnblocksRecv},
	{"ConcurrentSubscribers", testConcurrentSubscribers},
}

// idleSubscription returns a subscription to the test's streams that has
// delivered its three events and caught up: Recv has nothing to return.
func (e *env) idleSubscription() *reader {
	e.t.Helper()
	e.mustAppend(e.stream("idle"), eventstore.NoStream, e.events("idle", "Idle.v1", 3)...)
	r := e.subscribe(eventstore.Beginning, eventstore.Filter{StreamPrefixes: []string{e.ns}})
	r.waitEvents(3, waitTimeout)
	r.waitCaughtUp()
	return r
}

// recvUntilError calls Recv with ctx until it fails, accepting batches
// without events meanwhile, and returns the error. It fails the test if an
// event arrives or Recv does not fail within liveTimeout.
func (e *env) recvUntilError(ctx context.Context, sub eventstore.Subscription) error {
	e.t.Helper()
	deadline := time.Now().Add(liveTimeout)
	for time.Now().Before(deadline) {
		b, err := recvWithin(ctx, sub, time.Until(deadline))
		if errors.Is(err, errRecvStuck) || errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			break // our own time limit
		}
		if err != nil {
			return err
		}
		if len(b.Events) > 0 {
			e.t.Fatalf("Recv delivered %d events on an idle log", len(b.Events))
		}
	}
	e.t.Fatalf("Recv did not fail within %v", liveTimeout)
	return nil
}

func testRecvContextEnds(e *env, cancel bool) {
	r := e.idleSubscription()
	var (
		ctx  context.Context
		stop context.CancelFunc
		want error
	)
	if cancel {
		ctx, stop = context.WithCancel(e.ctx)
		time.AfterFunc(100*time.Millisecond, stop)
		want = context.Canceled
	} else {
		ctx, stop = context.WithTimeout(e.ctx, 100*time.Millisecond)
		want = context.DeadlineExceeded
	}
	defer stop()
	start := time.Now()
	err := e.recvUntilError(ctx, r.sub)
	if !errors.Is(err, want) {
		e.t.Fatalf("Recv after its context ended: err %v, want %v", err, want)
	}
	e.t.Logf("Recv returned %v after %v", err, time.Since(start))

	// An already-ended context.
	r2 := e.subscribe(eventstore.Beginning, eventstore.Filter{StreamPrefixes: []string{e.ns + "none-"}})
	ended, cancelEnded := context.WithCancel(e.ctx)
	cancelEnded()
	if err := e.recvUntilError(ended, r2.sub); !errors.Is(err, context.Canceled) {
		e.t.Fatalf("Recv with a cancelled context: err %v, want context.Canceled", err)
	}
}

// testSubscribeContextEnds cancels the context given to SubscribeAll: the
// subscription ends, and Recv fails even with a live context.
func testSubscribeContextEnds(e *env) {
	e.mustAppend(e.stream("s"), eventstore.NoStream, e.events("s", "S.v1", 3)...)
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	sub, err := e.store.SubscribeAll(ctx, eventstore.Beginning, eventstore.Filter{StreamPrefixes: []string{e.ns}})
	if err != nil {
		e.t.Fatalf("SubscribeAll: %v", err)
	}
	e.t.Cleanup(func() { _ = sub.Close() })
	r := &reader{e: e, sub: sub, filter: eventstore.Filter{StreamPrefixes: []string{e.ns}}, seen: map[eventstore.EventID]bool{}}
	r.waitEvents(3, waitTimeout)
	r.waitCaughtUp()

	cancel()
	if err := e.recvUntilError(e.ctx, sub); err == nil {
		e.t.Fatal("Recv after the subscription's context ended: no error")
	}
}

func testRecvAfterClose(e *env) {
	r := e.idleSubscription()
	r.close()
	if _, err := recvWithin(e.ctx, r.sub, liveTimeout); !errors.Is(err, eventstore.ErrClosed) {
		e.t.Fatalf("Recv after Close: err %v, want ErrClosed", err)
	}
	_ = r.sub.Close() // a second Close must not panic or block

	// Closed in the middle of catch-up, with events still to deliver.
	e.mustAppend(e.stream("more"), eventstore.NoStream, e.events("more", "More.v1", 200)...)
	busy := e.subscribe(eventstore.Beginning, eventstore.Filter{})
	busy.close()
	if b, err := recvWithin(e.ctx, busy.sub, liveTimeout); !errors.Is(err, eventstore.ErrClosed) {
		e.t.Fatalf("Recv after Close during catch-up: %d events, err %v; want ErrClosed", len(b.Events), err)
	}
}

// testCloseUnblocksRecv closes a subscription while another goroutine waits
// in Recv.
func testCloseUnblocksRecv(e *env) {
	r := e.idleSubscription()
	done := make(chan error, 1)
	go func() {
		for {
			b, err := r.sub.Recv(e.ctx)
			if err != nil {
				done <- err
				return
			}
			if len(b.Events) > 0 {
				done <- fmt.Errorf("Recv delivered %d events on an idle log", len(b.Events))
				return
			}
		}
	}()
	time.Sleep(100 * time.Millisecond)
	if err := r.sub.Close(); err != nil {
		e.t.Errorf("Close: %v", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, eventstore.ErrClosed) {
			e.t.Fatalf("Recv blocked during Close: err %v, want ErrClosed", err)
		}
	case <-time.After(liveTimeout):
		e.t.Fatalf("Recv still blocked %v after Close", liveTimeout)
	}
}

// testConcurrentSubscribers runs 8 subscribers while writers append: each
// gets the whole log, in the same order.
func testConcurrentSubscribers(e *env) {
	const subscribers = 8
	pre := []string{e.stream("pre-0"), e.stream("pre-1")}
	if err := e.writeConcurrently(pre, "pre", 50)(); err != nil {
		e.t.Fatal(err)
	}
	live := []string{e.stream("live-0"), e.stream("live-1")}
	wait := e.writeConcurrently(live, "live", 100)

	readers := make([]*reader, subscribers)
	for i := range readers {
		readers[i] = e.subscribe(eventstore.Beginning, eventstore.Filter{})
	}
	errs := make([]error, subscribers)
	var wg sync.WaitGroup
	for i, r := range readers {
		wg.Go(func() {
			errs[i] = r.until("300 events", waitTimeout, func() bool { return len(r.events) >= 300 })
		})
	}
	wg.Wait()
	if err := wait(); err != nil {
		e.t.Fatal(err)
	}
	want := e.readAll(append(pre, live...)...)
	for i, r := range readers {
		if errs[i] != nil {
			e.t.Fatalf("subscriber %d: %v", i, errs[i])
		}
		requireSameEvents(e.t, fmt.Sprintf("subscriber %d", i), r.events, want)
	}
}
