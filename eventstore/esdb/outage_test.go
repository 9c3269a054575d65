package esdb_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/esdb"
	"tvsm/eventstore/esdb/esdbdouble"
	"tvsm/projections"
)

// fastReconnect makes the store look for its server again within tens of
// milliseconds.
var fastReconnect = esdb.Options{
	Logger:       slog.New(slog.DiscardHandler),
	ReconnectMin: 20 * time.Millisecond, ReconnectMax: 200 * time.Millisecond, ProbeTimeout: time.Second,
}

// restartable is a double that a test can stop and start again on the
// same directory and address.
type restartable struct {
	t    *testing.T
	dir  string
	addr string
	opts esdbdouble.Options // of the next start
	srv  *esdbdouble.Server
}

func newRestartable(t *testing.T) *restartable {
	r := &restartable{t: t, dir: t.TempDir(), addr: "127.0.0.1:0"}
	r.start()
	r.addr = r.srv.Addr()
	return r
}

func (r *restartable) start() {
	r.t.Helper()
	srv, err := esdbdouble.Start(r.dir, r.addr, r.opts)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = srv.Close() })
	r.srv = srv
}

func (r *restartable) stop() {
	r.t.Helper()
	if err := r.srv.Close(); err != nil {
		r.t.Fatal(err)
	}
}

func testEvent(key string) eventstore.EventData {
	return eventstore.EventData{ID: eventstore.DeriveEventID(key, 0), Type: "Test.v1", Data: []byte(key)}
}

// appendUntilOK appends ev to stream with Any until it succeeds, for up to
// 10 s: while the store is coming back.
func appendUntilOK(t *testing.T, s eventstore.Store, stream string, ev eventstore.EventData) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := s.Append(t.Context(), stream, eventstore.Any, ev)
		if err == nil {
			return
		}
		if !errors.Is(err, eventstore.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("append while the store comes back: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServerLossAndReturn stops the server under the store: calls fail at
// once with ErrUnavailable, an open subscription fails its Recv, and once
// the server is back the same Store works again.
func TestServerLossAndReturn(t *testing.T) {
	d := newRestartable(t)
	s, err := esdb.Open(t.Context(), d.srv.URL(), fastReconnect)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := s.Append(t.Context(), "s", eventstore.NoStream, testEvent("a")); err != nil {
		t.Fatal(err)
	}
	sub, err := s.SubscribeAll(t.Context(), eventstore.Beginning, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	d.stop()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for {
		_, err := sub.Recv(ctx)
		if err == nil {
			continue
		}
		if errors.Is(err, eventstore.ErrClosed) || ctx.Err() != nil {
			t.Fatalf("Recv after the server stopped: %v, want a dropped subscription", err)
		}
		break
	}
	for range 3 {
		start := time.Now()
		_, err := s.Append(t.Context(), "s", eventstore.Exact(0), testEvent("b"))
		if !errors.Is(err, eventstore.ErrUnavailable) {
			t.Fatalf("append without a server: %v, want ErrUnavailable", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("append without a server took %v", d)
		}
	}
	if _, err := s.ReadStream(t.Context(), "s", eventstore.Start, 0); !errors.Is(err, eventstore.ErrUnavailable) {
		t.Fatalf("read without a server: %v, want ErrUnavailable", err)
	}

	d.start()
	appendUntilOK(t, s, "s", testEvent("b"))
	evs, err := s.ReadStream(t.Context(), "s", eventstore.Start, 0)
	if err != nil || len(evs) != 2 {
		t.Fatalf("after the server came back: %d events, %v", len(evs), err)
	}
}

// recorder is an idempotent projection that records what it is given.
type recorder struct {
	mu   sync.Mutex
	seen []eventstore.EventID
	pos  []eventstore.Position
}

func (*recorder) Name() string { return "recorder.v1" }
func (*recorder) Filter() eventstore.Filter {
	return eventstore.Filter{StreamPrefixes: []string{"rec-"}}
}
func (h *recorder) Apply(_ context.Context, events iter.Seq[*projections.Event], _ projections.Mode) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for e := range events {
		h.seen = append(h.seen, e.ID)
		h.pos = append(h.pos, e.Position)
	}
	return nil
}

func (h *recorder) waitFor(t *testing.T, n int) []eventstore.EventID {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		h.mu.Lock()
		seen := slices.Clone(h.seen)
		h.mu.Unlock()
		if len(seen) >= n {
			return seen
		}
		if time.Now().After(deadline) {
			t.Fatalf("projection has %d events, want %d", len(seen), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runRecorder runs a projection runner with a recorder on s until the end
// of the test.
func runRecorder(t *testing.T, s eventstore.Store, opts projections.RunnerOptions) (*recorder, *projections.Runner) {
	h := &recorder{}
	opts.Logger = slog.New(slog.DiscardHandler)
	opts.BackoffBase, opts.BackoffMax = 20*time.Millisecond, 200*time.Millisecond
	r := projections.NewRunner(s, domain.NewRegistry(), h, projections.SnapshotCheckpoints{}, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return h, r
}

// wantLog checks that the recorder got exactly the events of the rec-
// streams in $all, once each, in log order.
func wantLog(t *testing.T, s eventstore.Store, got []eventstore.EventID, streams ...string) {
	t.Helper()
	var all []eventstore.RecordedEvent
	for _, st := range streams {
		evs, err := s.ReadStream(t.Context(), st, eventstore.Start, 0)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, evs...)
	}
	slices.SortFunc(all, func(a, b eventstore.RecordedEvent) int { return a.Position.Compare(b.Position) })
	want := make([]eventstore.EventID, len(all))
	for i, e := range all {
		want[i] = e.ID
	}
	if !slices.Equal(got, want) {
		t.Fatalf("projection got %d events, the log holds %d: not the same, once each, in order", len(got), len(want))
	}
}

// TestRunnerResumesAfterServerRestart: the projection runner on this
// backend loses its subscription when the server stops, resubscribes with
// backoff after what it applied once the server is back, and ends with
// every event once.
func TestRunnerResumesAfterServerRestart(t *testing.T) {
	d := newRestartable(t)
	s, err := esdb.Open(t.Context(), d.srv.URL(), fastReconnect)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	h, r := runRecorder(t, s, projections.RunnerOptions{})
	for i := range 30 {
		appendUntilOK(t, s, fmt.Sprintf("rec-%d", i%3), testEvent(fmt.Sprintf("before-%d", i)))
		appendUntilOK(t, s, "other", testEvent(fmt.Sprintf("other-%d", i)))
	}
	h.waitFor(t, 30)

	d.stop()
	time.Sleep(100 * time.Millisecond) // the runner fails and backs off meanwhile
	d.start()
	for i := range 30 {
		appendUntilOK(t, s, fmt.Sprintf("rec-%d", i%3), testEvent(fmt.Sprintf("after-%d", i)))
	}
	got := h.waitFor(t, 60)
	wantLog(t, s, got, "rec-0", "rec-1", "rec-2")
	if st := r.Stats(); st.Reconnects == 0 {
		t.Fatalf("runner stats %+v: no resubscription counted", st)
	}
}

// TestWatchdogResubscribesSilentStall: a subscription that stays open but
// delivers nothing while the log grows is noticed by the runner's
// watchdog (the head is ahead), which resubscribes after what it applied.
func TestWatchdogResubscribesSilentStall(t *testing.T) {
	d := newRestartable(t)
	s := open(t, d.srv.URL())
	h, r := runRecorder(t, s, projections.RunnerOptions{WatchdogInterval: 100 * time.Millisecond})
	for i := range 5 {
		appendUntilOK(t, s, "rec-a", testEvent(fmt.Sprintf("before-%d", i)))
	}
	h.waitFor(t, 5)
	d.srv.StallSubscriptions()
	for i := range 5 {
		appendUntilOK(t, s, "rec-a", testEvent(fmt.Sprintf("after-%d", i)))
	}
	got := h.waitFor(t, 10)
	wantLog(t, s, got, "rec-a")
	if st := r.Stats(); st.Reconnects == 0 {
		t.Fatalf("runner stats %+v: the stalled subscription was not replaced", st)
	}
}
