package projections

import (
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tvsm/eventstore"
	"tvsm/eventstore/memory"
	"tvsm/internal/platform/supervise"
)

func TestRunnerAppliesEverythingOnceInOrder(t *testing.T) {
	s := openStore(t)
	for i := range 5 {
		appendEvents(t, s, fmt.Sprintf("account-%d", i), 20)
	}
	cp := fileCheckpoints(t)
	h := newTestHandler("rm.v1")
	// Small batches, so the runner handles many of them.
	fs := &faultyStore{Store: s, wrap: func(_ int, sub eventstore.Subscription) eventstore.Subscription {
		return &splitSub{Subscription: sub, size: 7}
	}}
	var caughtUp atomic.Int32
	opts := fastOptions(t)
	opts.OnCaughtUp = func() { caughtUp.Add(1) }
	r := NewRunner(fs, testEvents, h, cp, opts)
	startRunner(t, r)

	waitApplied(t, r, head(t, s))
	// Live tail after catch-up.
	last := appendEvents(t, s, "account-live", 10)
	waitApplied(t, r, last)

	_, deliveries, modes := h.snapshot()
	assertInOrderOnce(t, deliveries, positions(0, 110))
	for i, m := range modes {
		if m != Live {
			t.Fatalf("delivery %d in mode %v, want live", i, m)
		}
	}
	eventually(t, "checkpoint saved", func() bool { return loadCheckpoint(t, cp, "rm.v1") == last })
	st := r.Stats()
	if st.EventsApplied != 110 || !st.CaughtUp || st.Reconnects != 0 || st.Position != last || st.Name != "rm.v1" {
		t.Errorf("stats %+v", st)
	}
	if n := caughtUp.Load(); n != 1 {
		t.Errorf("OnCaughtUp called %d times, want 1", n)
	}
}

func TestRunnerRestartAppliesOnlyTail(t *testing.T) {
	s := openStore(t)
	cp := fileCheckpoints(t)
	first := appendEvents(t, s, "account-1", 30)

	h1 := newTestHandler("rm.v1")
	r1 := NewRunner(s, testEvents, h1, cp, fastOptions(t))
	stop := startRunner(t, r1)
	waitApplied(t, r1, first)
	stop()
	if got := loadCheckpoint(t, cp, "rm.v1"); got != first {
		t.Fatalf("checkpoint after first run = %v, want %v", got, first)
	}

	tail := appendEvents(t, s, "account-2", 12)
	h2 := newTestHandler("rm.v1")
	r2 := NewRunner(s, testEvents, h2, cp, fastOptions(t))
	if got := r2.Progress().Position(); got != eventstore.Beginning {
		t.Fatalf("progress before Run = %v", got)
	}
	startRunner(t, r2)
	waitApplied(t, r2, tail)
	_, deliveries, modes := h2.snapshot()
	assertInOrderOnce(t, deliveries, positions(first.Commit, tail.Commit))
	if slices.ContainsFunc(modes, func(m Mode) bool { return m != Live }) {
		t.Errorf("catch-up from a stored checkpoint used modes %v, want live", modes)
	}
}

// TestHandlerIdempotentFedTwice feeds the same log to the same handler state
// twice (a rebuild over existing state) and expects the same state.
func TestHandlerIdempotentFedTwice(t *testing.T) {
	s := openStore(t)
	for i := range 4 {
		appendEvents(t, s, fmt.Sprintf("account-%d", i), 15)
	}
	h := newTestHandler("rm.v1")
	r1 := NewRunner(s, testEvents, h, fileCheckpoints(t), fastOptions(t))
	stop := startRunner(t, r1)
	waitApplied(t, r1, head(t, s))
	stop()
	once, _, _ := h.snapshot()

	opts := fastOptions(t)
	opts.Rebuild = true
	r2 := NewRunner(s, testEvents, h, fileCheckpoints(t), opts)
	stop = startRunner(t, r2)
	waitApplied(t, r2, head(t, s))
	stop()
	twice, deliveries, _ := h.snapshot()
	if len(deliveries) != 120 {
		t.Fatalf("%d deliveries, want every event twice (120)", len(deliveries))
	}
	if !maps.Equal(once, twice) {
		t.Fatalf("state after feeding twice differs: %d vs %d entries", len(once), len(twice))
	}
}

// TestRunnerCrashBetweenApplyAndSave: batches applied but whose checkpoint
// could not be saved are delivered again after a restart, and the state is the
// same as if they had been applied once. Within one run a failed save does not
// redeliver: the runner resubscribes after what it applied.
func TestRunnerCrashBetweenApplyAndSave(t *testing.T) {
	s := openStore(t)
	last := appendEvents(t, s, "account-1", 40)
	inner := fileCheckpoints(t)
	cp := &flakyCheckpoints{CheckpointStore: inner, fail: func(n int) bool { return n >= 2 }}
	split := func(_ int, sub eventstore.Subscription) eventstore.Subscription {
		return &splitSub{Subscription: sub, size: 10}
	}
	fs := &faultyStore{Store: s, wrap: split}
	h := newTestHandler("rm.v1")
	r1 := NewRunner(fs, testEvents, h, cp, fastOptions(t))
	stop := startRunner(t, r1)
	waitApplied(t, r1, last)
	eventually(t, "a failed save reported", func() bool { return r1.Stats().LastError != "" })
	stop() // the process dies: only the first batch's checkpoint was saved
	if got := loadCheckpoint(t, inner, "rm.v1"); got != pos(10) {
		t.Fatalf("saved checkpoint %v, want %v", got, pos(10))
	}
	if _, deliveries, _ := h.snapshot(); len(deliveries) != 40 {
		t.Fatalf("%d deliveries in the first run, want 40: a failed save must not redeliver in-process", len(deliveries))
	}

	fs2 := &faultyStore{Store: s, wrap: split}
	r2 := NewRunner(fs2, testEvents, h, inner, fastOptions(t))
	startRunner(t, r2)
	waitApplied(t, r2, last)
	eventually(t, "checkpoint at head", func() bool { return loadCheckpoint(t, inner, "rm.v1") == last })
	state, deliveries, _ := h.snapshot()
	if len(state) != 40 {
		t.Fatalf("state has %d events, want 40", len(state))
	}
	if len(deliveries) != 70 {
		t.Fatalf("%d deliveries, want 70: events 11..40 again after the restart", len(deliveries))
	}
	if got := fs2.subscriptions(); len(got) != 1 || got[0] != pos(10) {
		t.Errorf("restart subscribed after %v, want [10]", got)
	}
}

// TestRunnerThrottlesCheckpointSaves: with CheckpointEvery set, a stream of
// batches is saved far less often than once per batch, and the last applied
// position is still saved while idle and when Run ends.
func TestRunnerThrottlesCheckpointSaves(t *testing.T) {
	s := openStore(t)
	cp := &flakyCheckpoints{CheckpointStore: fileCheckpoints(t), fail: func(int) bool { return false }}
	fs := &faultyStore{Store: s, wrap: func(_ int, sub eventstore.Subscription) eventstore.Subscription {
		return &splitSub{Subscription: sub, size: 1}
	}}
	h := newTestHandler("rm.v1")
	opts := fastOptions(t)
	opts.CheckpointEvery = 200 * time.Millisecond
	r := NewRunner(fs, testEvents, h, cp, opts)
	startRunner(t, r)
	waitApplied(t, r, eventstore.Beginning)
	var last eventstore.Position
	for i := 0; i < 50; i++ {
		last = appendEvents(t, s, fmt.Sprintf("account-%d", i), 1)
	}
	waitApplied(t, r, last)
	eventually(t, "idle tail saved", func() bool { return loadCheckpoint(t, cp, "rm.v1") == last })
	if st := r.Stats(); st.Batches < 50 {
		t.Fatalf("%d batches, want at least 50", st.Batches)
	}
	if n := cp.calls(); n > 20 {
		t.Fatalf("%d checkpoint saves for 50 live batches: not throttled", n)
	}
}

func TestRunnerRetriesFailedApply(t *testing.T) {
	s := openStore(t)
	last := appendEvents(t, s, "account-1", 50)
	fs := &faultyStore{Store: s, wrap: func(_ int, sub eventstore.Subscription) eventstore.Subscription {
		return &splitSub{Subscription: sub, size: 8}
	}}
	h := newTestHandler("rm.v1")
	var failures []time.Time
	h.fail = func(call int, _ []eventstore.RecordedEvent) error {
		if call >= 3 && call <= 6 { // fails four times in a row
			failures = append(failures, time.Now())
			return errInjected
		}
		return nil
	}
	cp := fileCheckpoints(t)
	opts := fastOptions(t)
	opts.BackoffBase, opts.BackoffMax = 2*time.Millisecond, 50*time.Millisecond
	r := NewRunner(fs, testEvents, h, cp, opts)
	startRunner(t, r)
	waitApplied(t, r, last)

	state, deliveries, _ := h.snapshot()
	if len(state) != 50 {
		t.Fatalf("state has %d events, want 50", len(state))
	}
	// Failed calls changed nothing, so every event was delivered once, in
	// order: nothing lost, skipped or repeated.
	assertInOrderOnce(t, deliveries, positions(0, 50))
	if got := fs.subscriptions(); len(got) != 5 || slices.ContainsFunc(got[1:], func(p eventstore.Position) bool { return p != pos(16) }) {
		t.Errorf("subscribed after %v, want 0 then 16 four times", got)
	}
	if st := r.Stats(); st.Reconnects != 4 || !errors.Is(errInjected, errInjected) || st.LastError == "" {
		t.Errorf("stats %+v", st)
	}
	eventually(t, "checkpoint at head", func() bool { return loadCheckpoint(t, cp, "rm.v1") == last })
}

func TestRunnerResubscribesDroppedSubscription(t *testing.T) {
	s := openStore(t)
	appendEvents(t, s, "account-1", 30)
	fs := &faultyStore{Store: s}
	fs.wrap = func(n int, sub eventstore.Subscription) eventstore.Subscription {
		split := &splitSub{Subscription: sub, size: 4}
		if n <= 3 { // the first three subscriptions drop after two batches
			return &dropSub{Subscription: split, n: 2}
		}
		return split
	}
	h := newTestHandler("rm.v1")
	cp := fileCheckpoints(t)
	r := NewRunner(fs, testEvents, h, cp, fastOptions(t))
	startRunner(t, r)
	waitApplied(t, r, pos(30))
	last := appendEvents(t, s, "account-2", 5) // live after the drops
	waitApplied(t, r, last)

	_, deliveries, _ := h.snapshot()
	assertInOrderOnce(t, deliveries, positions(0, 35))
	want := []eventstore.Position{pos(0), pos(8), pos(16), pos(24)}
	if got := fs.subscriptions(); !slices.Equal(got, want) {
		t.Errorf("subscribed after %v, want %v", got, want)
	}
	if st := r.Stats(); st.Reconnects != 3 {
		t.Errorf("reconnects %d, want 3", st.Reconnects)
	}
}

func TestRunnerRebuildReplaysThenGoesLive(t *testing.T) {
	s := openStore(t)
	history := appendEvents(t, s, "account-1", 25)
	cp := fileCheckpoints(t)
	if err := cp.Save(context.Background(), "rm.v1", history); err != nil {
		t.Fatal(err)
	}
	h := newTestHandler("rm.v1")
	var replayingAtCatchUp atomic.Bool
	opts := fastOptions(t)
	opts.Rebuild = true
	var r *Runner
	opts.OnCaughtUp = func() { replayingAtCatchUp.Store(r.Stats().Replaying) }
	fs := &faultyStore{Store: s, wrap: func(n int, sub eventstore.Subscription) eventstore.Subscription {
		split := &splitSub{Subscription: sub, size: 6}
		if n == 1 { // a failure during the replay must not end it early
			return &dropSub{Subscription: split, n: 2}
		}
		return split
	}}
	r = NewRunner(fs, testEvents, h, cp, opts)
	startRunner(t, r)
	waitApplied(t, r, history)
	live := appendEvents(t, s, "account-1", 5)
	waitApplied(t, r, live)

	_, deliveries, modes := h.snapshot()
	assertInOrderOnce(t, deliveries, positions(0, 30))
	for i, m := range modes {
		want := Replay
		if i >= 25 {
			want = Live
		}
		if m != want {
			t.Fatalf("delivery %d (position %v) in mode %v, want %v", i, deliveries[i], m, want)
		}
	}
	if got := fs.subscriptions(); got[0] != eventstore.Beginning {
		t.Errorf("rebuild subscribed after %v, want Beginning", got[0])
	}
	if replayingAtCatchUp.Load() {
		t.Error("OnCaughtUp ran while still replaying")
	}
	if st := r.Stats(); st.Replaying || !st.CaughtUp {
		t.Errorf("stats %+v", st)
	}
	eventually(t, "checkpoint at head", func() bool { return loadCheckpoint(t, cp, "rm.v1") == live })
}

func TestRunnerSparseFilterAdvancesCheckpoint(t *testing.T) {
	s := openStore(t)
	appendEvents(t, s, "device-1", 100)
	appendEvents(t, s, "account-1", 2)
	last := appendEvents(t, s, "device-2", 100)

	cp := fileCheckpoints(t)
	some := newTestHandler("accounts.v1", "account-")
	none := newTestHandler("nothing.v1", "no-such-stream-")
	for _, h := range []*testHandler{some, none} {
		r := NewRunner(s, testEvents, h, cp, fastOptions(t))
		startRunner(t, r)
		waitApplied(t, r, last)
		eventually(t, h.name+" checkpoint at head", func() bool { return loadCheckpoint(t, cp, h.name) == last })
	}
	if _, d, _ := some.snapshot(); !slices.Equal(d, []eventstore.Position{pos(101), pos(102)}) {
		t.Errorf("filtered handler got %v", d)
	}
	if _, d, _ := none.snapshot(); len(d) != 0 {
		t.Errorf("handler matching nothing got %v", d)
	}
}

func TestRunnerWatchdogResubscribesStalledSubscription(t *testing.T) {
	s := openStore(t)
	appendEvents(t, s, "account-1", 3)
	stalled := make(chan struct{})
	fs := &faultyStore{Store: s, wrap: func(n int, sub eventstore.Subscription) eventstore.Subscription {
		if n == 1 { // catch-up works, then the live phase goes silent
			return &stallSub{Subscription: sub, n: 1, stalled: stalled}
		}
		return sub
	}}
	h := newTestHandler("rm.v1")
	opts := fastOptions(t)
	opts.WatchdogInterval = 20 * time.Millisecond
	r := NewRunner(fs, testEvents, h, fileCheckpoints(t), opts)
	startRunner(t, r)
	waitApplied(t, r, pos(3))
	<-stalled
	last := appendEvents(t, s, "account-1", 4)
	waitApplied(t, r, last)

	_, deliveries, _ := h.snapshot()
	assertInOrderOnce(t, deliveries, positions(0, 7))
	if got := fs.subscriptions(); len(got) < 2 || got[0] != pos(0) || got[1] != pos(3) {
		t.Errorf("subscribed after %v, want 0 then 3", got)
	}
	if st := r.Stats(); st.Reconnects < 1 {
		t.Errorf("reconnects %d, want the watchdog's", st.Reconnects)
	}
}

func TestRunnerWatchdogQuietWhenIdleOrBusy(t *testing.T) {
	const interval = 80 * time.Millisecond
	s := openStore(t)
	appendEvents(t, s, "account-1", 3)
	h := newTestHandler("rm.v1")
	// A slow Apply (several watchdog intervals) is not a stall.
	h.fail = func(call int, _ []eventstore.RecordedEvent) error {
		if call == 2 {
			time.Sleep(3 * interval)
		}
		return nil
	}
	opts := fastOptions(t)
	opts.WatchdogInterval = interval
	r := NewRunner(s, testEvents, h, fileCheckpoints(t), opts)
	startRunner(t, r)
	waitApplied(t, r, pos(3))
	time.Sleep(3 * interval) // idle at the head
	last := appendEvents(t, s, "account-1", 1)
	waitApplied(t, r, last) // the slow Apply
	for range 4 {           // live appends while watched
		last = appendEvents(t, s, "account-1", 1)
		waitApplied(t, r, last)
		time.Sleep(interval / 2)
	}
	if st := r.Stats(); st.Reconnects != 0 {
		t.Errorf("watchdog resubscribed a healthy subscription %d times", st.Reconnects)
	}
}

func TestRunnerRunsOnce(t *testing.T) {
	s := openStore(t)
	r := NewRunner(s, testEvents, newTestHandler("rm.v1"), fileCheckpoints(t), fastOptions(t))
	startRunner(t, r)
	eventually(t, "running", func() bool { return r.Stats().CaughtUp })
	if err := r.Run(context.Background()); err == nil {
		t.Fatal("second concurrent Run succeeded")
	}
}

// TestSnapshotReadModelRestart shows the in-memory read model pattern: the
// state and its position are saved together in a snapshot; on restart the
// model is restored from it and only the tail of the log is applied.
func TestSnapshotReadModelRestart(t *testing.T) {
	s := openStore(t)
	path := t.TempDir() + "/rm.snap"
	appendEvents(t, s, "account-1", 20)

	h1 := newTestHandler("rm.v1")
	r1 := NewRunner(s, testEvents, h1, SnapshotCheckpoints{}, fastOptions(t))
	stop := startRunner(t, r1)
	waitApplied(t, r1, pos(20))
	h1.mu.Lock() // as the read model would: no Apply while encoding
	err := WriteSnapshot(path, r1.Progress().Position(), func(w io.Writer) error {
		return gob.NewEncoder(w).Encode(h1.state)
	})
	h1.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	stop()

	tail := appendEvents(t, s, "account-2", 5)
	h2 := newTestHandler("rm.v1")
	at, err := ReadSnapshot(path, func(r io.Reader) error { return gob.NewDecoder(r).Decode(&h2.state) })
	if err != nil || at != pos(20) || len(h2.state) != 20 {
		t.Fatalf("restore: at %v, %d events, err %v", at, len(h2.state), err)
	}
	r2 := NewRunner(s, testEvents, h2, SnapshotCheckpoints{Position: at}, fastOptions(t))
	startRunner(t, r2)
	waitApplied(t, r2, tail)
	state, deliveries, _ := h2.snapshot()
	assertInOrderOnce(t, deliveries, positions(20, 25))
	if len(state) != 25 {
		t.Errorf("state has %d events, want 25", len(state))
	}
}

// TestRunnerSparseFilterLiveTail: events the filter drops after catch-up
// must still let Progress reach the head (so read-your-writes waits and the
// checkpoint do not park). A backend that reports no checkpoint for them in
// its live phase is covered by the watchdog's resubscription.
func TestRunnerSparseFilterLiveTail(t *testing.T) {
	s := openStore(t)
	appendEvents(t, s, "account-1", 2)
	h := newTestHandler("accounts.v1", "account-")
	cp := fileCheckpoints(t)
	opts := fastOptions(t)
	opts.WatchdogInterval = 20 * time.Millisecond
	r := NewRunner(s, testEvents, h, cp, opts)
	startRunner(t, r)
	waitApplied(t, r, pos(2))
	last := appendEvents(t, s, "device-1", 5)
	waitApplied(t, r, last)
	eventually(t, "checkpoint at head", func() bool { return loadCheckpoint(t, cp, h.name) == last })
	if _, d, _ := h.snapshot(); !slices.Equal(d, positions(0, 2)) {
		t.Errorf("delivered %v", d)
	}
	t.Logf("reconnects: %d", r.Stats().Reconnects)
}

func TestRunnerMinBatchIntervalSpacesLiveBatchesOnly(t *testing.T) {
	s := openStore(t)
	appendEvents(t, s, "account-old", 70)
	h := newTestHandler("paced.v1")
	// Catch-up comes in batches of 7: ten of them, none of them paced.
	fs := &faultyStore{Store: s, wrap: func(_ int, sub eventstore.Subscription) eventstore.Subscription {
		return &splitSub{Subscription: sub, size: 7}
	}}
	opts := fastOptions(t)
	const every = 150 * time.Millisecond
	opts.MinBatchInterval = every
	r := NewRunner(fs, testEvents, h, fileCheckpoints(t), opts)
	start := time.Now()
	stop := startRunner(t, r)
	waitApplied(t, r, head(t, s))
	if d := time.Since(start); d > 9*every {
		t.Errorf("catch-up of 10 batches took %v: it was paced", d)
	}

	// Live: 20 commits in quick succession reach the handler in a few
	// batches, not 20.
	h.mu.Lock()
	callsBefore := h.calls
	h.mu.Unlock()
	var last eventstore.Position
	for i := range 20 {
		last = appendEvents(t, s, fmt.Sprintf("account-live-%d", i), 1)
	}
	waitApplied(t, r, last)
	h.mu.Lock()
	liveCalls := h.calls - callsBefore
	h.mu.Unlock()
	if liveCalls > 4 {
		t.Errorf("20 live commits applied in %d batches, want them gathered into a few", liveCalls)
	}
	_, deliveries, _ := h.snapshot()
	assertInOrderOnce(t, deliveries, positions(0, 90))

	// Ending the runner does not wait out the interval.
	stopped := time.Now()
	stop()
	if d := time.Since(stopped); d > every {
		t.Errorf("stop took %v, longer than the batch interval %v", d, every)
	}
}

// Given a live runner paced to one batch every 2 s, when the subscription
// hands out a backlog of 60 events in six batches marked More, then they
// are applied one after the other: the pace applies to a batch that found
// nothing more, not to each piece of a backlog (paced, they would take 10 s).
func TestRunnerDoesNotPaceABacklog(t *testing.T) {
	s := openStore(t)
	h := newTestHandler("backlog.v1")
	fs := &faultyStore{Store: s, wrap: func(_ int, sub eventstore.Subscription) eventstore.Subscription {
		return &splitSub{Subscription: sub, size: 10, backlog: true}
	}}
	opts := fastOptions(t)
	const every = 2 * time.Second
	opts.MinBatchInterval = every
	r := NewRunner(fs, testEvents, h, fileCheckpoints(t), opts)
	startRunner(t, r)
	eventually(t, "caught up", func() bool { return r.Stats().Live })
	start := time.Now()
	last := appendEvents(t, s, "account-burst", 60)
	waitApplied(t, r, last)
	if d := time.Since(start); d > 3*every {
		t.Errorf("a backlog of 6 batches took %v to apply: each was paced", d)
	}
	_, deliveries, _ := h.snapshot()
	assertInOrderOnce(t, deliveries, positions(0, 60))
}

// A handler that panics does not take the runner down: the panic is
// recovered, logged and counted, the runner reports Panicked and
// resubscribes after what was applied, as after an error, until a batch
// goes through; nothing is lost or applied twice.
func TestRunnerRecoversHandlerPanic(t *testing.T) {
	s := openStore(t)
	last := appendEvents(t, s, "account-1", 30)
	fs := &faultyStore{Store: s, wrap: func(_ int, sub eventstore.Subscription) eventstore.Subscription {
		return &splitSub{Subscription: sub, size: 8}
	}}
	h := newTestHandler("panicky.v1")
	release := make(chan struct{})
	h.fail = func(call int, _ []eventstore.RecordedEvent) error {
		if call >= 2 {
			select {
			case <-release:
			default:
				panic("projection bug")
			}
		}
		return nil
	}
	before := supervise.Counts()["projection/panicky.v1"]
	opts := fastOptions(t)
	opts.BackoffBase, opts.BackoffMax = 2*time.Millisecond, 10*time.Millisecond
	r := NewRunner(fs, testEvents, h, fileCheckpoints(t), opts)
	startRunner(t, r)
	eventually(t, "panics counted and reported", func() bool {
		return supervise.Counts()["projection/panicky.v1"] >= before+2 && r.Stats().Panicked
	})
	if st := r.Stats(); !strings.Contains(st.LastError, "panic: projection bug") || st.Position != pos(8) {
		t.Fatalf("stats while panicking %+v; want the panic as last error, position 8", st)
	}
	close(release)
	waitApplied(t, r, last)
	if st := r.Stats(); st.Panicked {
		t.Fatalf("still Panicked after applying batches: %+v", st)
	}
	_, deliveries, _ := h.snapshot()
	assertInOrderOnce(t, deliveries, positions(0, 30))
}

// TestRunnerLiveFollowsTheSubscription: Live is set once the subscription
// has reached the head, cleared while the store cannot be reached (its
// subscription failed and resubscribing fails), and set again once a
// resubscription has caught up, with what was appended meanwhile applied.
// CaughtUp stays set throughout.
func TestRunnerLiveFollowsTheSubscription(t *testing.T) {
	s := openStore(t)
	appendEvents(t, s, "account-1", 10)
	store := &outageStore{Store: s}
	r := NewRunner(store, testEvents, newTestHandler("rm.v1"), fileCheckpoints(t), fastOptions(t))
	startRunner(t, r)
	eventually(t, "live", func() bool { return r.Stats().Live })

	store.down.Store(true)
	eventually(t, "not live while the store is down", func() bool { return !r.Stats().Live })
	last := appendEvents(t, s, "account-2", 3)
	eventually(t, "failed resubscriptions", func() bool { return r.Stats().Reconnects >= 3 })
	if st := r.Stats(); st.Live || !st.CaughtUp {
		t.Fatalf("during the outage: %+v, want not live and caught up once", st)
	}

	store.down.Store(false)
	waitApplied(t, r, last)
	eventually(t, "live again", func() bool { return r.Stats().Live })
}

// outageStore makes its store unreachable on demand: subscriptions fail to
// start, and running ones fail their Recv (within a millisecond, also while
// waiting for events), as with a server that went away.
type outageStore struct {
	*memory.Store
	down atomic.Bool
}

func (o *outageStore) SubscribeAll(ctx context.Context, after eventstore.Position, filter eventstore.Filter) (eventstore.Subscription, error) {
	if o.down.Load() {
		return nil, eventstore.ErrUnavailable
	}
	sub, err := o.Store.SubscribeAll(ctx, after, filter)
	if err != nil {
		return nil, err
	}
	return &outageSub{Subscription: sub, down: &o.down}, nil
}

type outageSub struct {
	eventstore.Subscription
	down *atomic.Bool
}

func (s *outageSub) Recv(ctx context.Context) (eventstore.Batch, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if s.down.Load() {
					cancel()
					return
				}
			}
		}
	}()
	b, err := s.Subscription.Recv(ctx)
	if s.down.Load() {
		return eventstore.Batch{}, eventstore.ErrUnavailable
	}
	return b, err
}
