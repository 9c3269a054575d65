package projections

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/memory"
)

// testTimeout bounds every wait in these tests.
const testTimeout = 10 * time.Second

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// openStore returns an in-memory store: the runner's tests need the
// store's contract (dense positions, catch-up then live), not its disk.
func openStore(t *testing.T) *memory.Store {
	t.Helper()
	s := memory.New()
	t.Cleanup(func() { s.Close() })
	return s
}

// appendEvents appends n events, one per call, to stream and returns the
// position of the last.
func appendEvents(t *testing.T, s eventstore.Store, stream string, n int) eventstore.Position {
	t.Helper()
	var last eventstore.Position
	for i := range n {
		e := eventstore.EventData{
			ID:   eventstore.NewEventID(),
			Type: "Test.v1",
			Data: fmt.Appendf(nil, "%s#%d", stream, i),
		}
		res, err := s.Append(context.Background(), stream, eventstore.Any, e)
		if err != nil {
			t.Fatalf("append to %s: %v", stream, err)
		}
		last = res.Position
	}
	return last
}

func head(t *testing.T, s *memory.Store) eventstore.Position {
	t.Helper()
	p, err := s.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// testEvents is the registry the runners of these tests decode with: the
// test events ("Test.v1") are not in it, so they reach handlers Unknown.
var testEvents = domain.NewRegistry()

// testHandler is an idempotent projection: its state is the set of event ids
// seen, with their data. It also records every delivery, for assertions.
type testHandler struct {
	name   string
	filter eventstore.Filter

	mu         sync.Mutex
	state      map[eventstore.EventID]string
	deliveries []eventstore.Position // every event passed to Apply, repeats included
	modes      []Mode                // mode of each delivery
	calls      int
	// fail, when set, is called before each Apply with the 1-based call
	// number; a non-nil result fails that call without changing state.
	fail func(call int, events []eventstore.RecordedEvent) error
}

func newTestHandler(name string, prefixes ...string) *testHandler {
	return &testHandler{
		name:   name,
		filter: eventstore.Filter{StreamPrefixes: prefixes},
		state:  make(map[eventstore.EventID]string),
	}
}

func (h *testHandler) Name() string              { return h.name }
func (h *testHandler) Filter() eventstore.Filter { return h.filter }

func (h *testHandler) Apply(ctx context.Context, decoded iter.Seq[*Event], mode Mode) error {
	var events []eventstore.RecordedEvent
	for e := range decoded {
		events = append(events, *e.RecordedEvent)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls++
	if h.fail != nil {
		if err := h.fail(h.calls, events); err != nil {
			return err
		}
	}
	for _, e := range events {
		h.state[e.ID] = string(e.Data)
		h.deliveries = append(h.deliveries, e.Position)
		h.modes = append(h.modes, mode)
	}
	return nil
}

func (h *testHandler) snapshot() (map[eventstore.EventID]string, []eventstore.Position, []Mode) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.state), slices.Clone(h.deliveries), slices.Clone(h.modes)
}

// startRunner runs r until the test ends or the returned stop is called;
// stop waits (bounded) for Run to return and checks its error.
func startRunner(t *testing.T, r *Runner) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Run returned %v, want context.Canceled", err)
				}
			case <-time.After(testTimeout):
				t.Errorf("Run did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitApplied waits until the runner has applied pos.
func waitApplied(t *testing.T, r *Runner, pos eventstore.Position) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := r.Progress().Wait(ctx, pos); err != nil {
		t.Fatalf("waiting for %v (applied %v, stats %+v): %v", pos, r.Progress().Position(), r.Stats(), err)
	}
}

// eventually polls cond until it holds or the test timeout passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// faultyStore delegates to a real (in-memory) store and lets a test wrap the
// subscriptions it returns, to inject faults. It records where every
// subscription started.
type faultyStore struct {
	*memory.Store
	wrap func(n int, sub eventstore.Subscription) eventstore.Subscription

	mu     sync.Mutex
	afters []eventstore.Position
}

func (f *faultyStore) SubscribeAll(ctx context.Context, after eventstore.Position, filter eventstore.Filter) (eventstore.Subscription, error) {
	sub, err := f.Store.SubscribeAll(ctx, after, filter)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.afters = append(f.afters, after)
	n := len(f.afters)
	f.mu.Unlock()
	if f.wrap != nil {
		return f.wrap(n, sub), nil
	}
	return sub, nil
}

func (f *faultyStore) subscriptions() []eventstore.Position {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.afters)
}

// splitSub re-delivers each batch of the real subscription in chunks of at
// most size events, as a backend with smaller batches would. Each chunk's
// checkpoint is its last event; the last chunk keeps the real checkpoint and
// flags. With backlog it cuts only live batches, marking the other chunks
// CaughtUp and More: a live subscription behind the log's head, handed out
// a batch limit at a time.
type splitSub struct {
	eventstore.Subscription
	size    int
	backlog bool
	pending []eventstore.Batch
}

func (s *splitSub) Recv(ctx context.Context) (eventstore.Batch, error) {
	if len(s.pending) == 0 {
		b, err := s.Subscription.Recv(ctx)
		if err != nil || s.backlog && !b.CaughtUp {
			return b, err
		}
		for len(b.Events) > s.size {
			chunk := eventstore.Batch{Events: b.Events[:s.size], Checkpoint: b.Events[s.size-1].Position, CaughtUp: s.backlog, More: s.backlog}
			s.pending = append(s.pending, chunk)
			b.Events = b.Events[s.size:]
		}
		s.pending = append(s.pending, b)
	}
	b := s.pending[0]
	s.pending = s.pending[1:]
	return b, nil
}

var errInjected = errors.New("injected fault")

// dropSub fails Recv with errInjected after delivering n batches.
type dropSub struct {
	eventstore.Subscription
	n int
}

func (s *dropSub) Recv(ctx context.Context) (eventstore.Batch, error) {
	if s.n == 0 {
		return eventstore.Batch{}, fmt.Errorf("dropped: %w", errInjected)
	}
	s.n--
	return s.Subscription.Recv(ctx)
}

// stallSub delivers n batches and then goes silent, like a subscription
// whose server stopped sending: Recv blocks until ctx ends.
type stallSub struct {
	eventstore.Subscription
	n       int
	stalled chan struct{}
}

func (s *stallSub) Recv(ctx context.Context) (eventstore.Batch, error) {
	if s.n == 0 {
		close(s.stalled)
		<-ctx.Done()
		return eventstore.Batch{}, ctx.Err()
	}
	s.n--
	return s.Subscription.Recv(ctx)
}

// flakyCheckpoints fails the Save calls for which fail returns true.
type flakyCheckpoints struct {
	CheckpointStore
	mu    sync.Mutex
	saves int
	fail  func(save int) bool
}

func (f *flakyCheckpoints) Save(ctx context.Context, name string, pos eventstore.Position) error {
	f.mu.Lock()
	f.saves++
	n := f.saves
	f.mu.Unlock()
	if f.fail(n) {
		return fmt.Errorf("save %d: %w", n, errInjected)
	}
	return f.CheckpointStore.Save(ctx, name, pos)
}

// calls returns how many saves were attempted.
func (f *flakyCheckpoints) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.saves
}

func fileCheckpoints(t *testing.T) *FileCheckpointStore {
	t.Helper()
	cp, err := FileCheckpoints(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func loadCheckpoint(t *testing.T, cp CheckpointStore, name string) eventstore.Position {
	t.Helper()
	p, err := cp.Load(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fastOptions are runner options for tests: quick retries, no watchdog.
func fastOptions(t *testing.T) RunnerOptions {
	return RunnerOptions{
		BackoffBase:      time.Millisecond,
		BackoffMax:       10 * time.Millisecond,
		WatchdogInterval: -1,
		CheckpointEvery:  -1, // save after every batch: tests look at each save
		Logger:           testLogger(t),
	}
}

// assertInOrderOnce checks that deliveries hold each position in want exactly
// once, in order.
func assertInOrderOnce(t *testing.T, deliveries, want []eventstore.Position) {
	t.Helper()
	if !slices.Equal(deliveries, want) {
		t.Fatalf("delivered %d events %v\nwant %d %v", len(deliveries), deliveries, len(want), want)
	}
}

// positions returns the positions from+1 .. to of a log with dense positions.
func positions(from, to uint64) []eventstore.Position {
	var out []eventstore.Position
	for p := from + 1; p <= to; p++ {
		out = append(out, eventstore.Position{Commit: p, Prepare: p})
	}
	return out
}
