package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"tvsm/domain"
	"tvsm/eventstore"
)

func TestExecuteCreateThenUpdate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.executor(nil, Options{})
	res, err := Execute(e.ctx, x, "counter-1", counterDecider, any(create{Name: "a"}), meta("r1"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Revision != eventstore.Exact(0) || res.Position.IsZero() || len(res.Events) != 1 || !res.State.Exists {
		t.Fatalf("create: %+v", res)
	}
	res, err = Execute(e.ctx, x, "counter-1", counterDecider, any(add{N: 5}), meta("r2"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Revision != eventstore.Exact(1) || res.State.Total != 5 {
		t.Fatalf("add: %+v", res)
	}
	recs := e.read("counter-1")
	if len(recs) != 2 || recs[1].Position != res.Position {
		t.Fatalf("stored %d events, last at %v; result position %v", len(recs), recs[len(recs)-1].Position, res.Position)
	}
	m, err := domain.DecodeMetadata(recs[1].Metadata)
	if err != nil {
		t.Fatal(err)
	}
	want := domain.Metadata{OccurredAt: e.clock.Now(), Actor: domain.AdminActor("alice"), RequestID: "r2"}
	if m != want || res.Events[0].Metadata() != want {
		t.Fatalf("metadata %+v, envelope %+v, want %+v", m, res.Events[0].Metadata(), want)
	}
}

func TestExecuteNoChangeAppendsNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.executor(nil, Options{})
	mustExec(t, x, "counter-1", create{Name: "a"})
	first := mustExec(t, x, "counter-1", set{Total: 3})
	for _, c := range []any{set{Total: 3}, add{N: 0}} {
		res := mustExec(t, x, "counter-1", c)
		if len(res.Events) != 0 || res.Revision != first.Revision || res.Position != first.Position || res.State.Total != 3 {
			t.Fatalf("%#v: %+v, want the unchanged %+v", c, res, first)
		}
	}
	if n := len(e.read("counter-1")); n != 2 {
		t.Fatalf("stream has %d events, want 2", n)
	}
}

func TestExecuteDecideErrorKeepsIdentity(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.executor(nil, Options{})
	_, err := Execute(e.ctx, x, "counter-9", counterDecider, any(add{N: 1}), meta("r1"))
	var op *OpError
	if !errors.Is(err, errNotFound) || !errors.As(err, &op) || op.Op != "decide" || op.Stream != "counter-9" {
		t.Fatalf("err = %v, want errNotFound wrapped in a decide OpError naming the stream", err)
	}
	if e.read("counter-9") != nil {
		t.Fatal("a failed decision appended events")
	}
}

// A writer that bypasses this executor (another node) makes its cached
// state old; the append's expected revision reveals it and the command is
// decided again on the reloaded stream.
func TestExecuteConflictWithAnotherWriter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fs := &faultyStore{Store: e.store}
	x := e.executor(fs, Options{})
	mustExec(t, x, "counter-1", create{Name: "a"}) // cached at revision 0
	e.appendDirect("counter-1", counterAdded{N: 10})

	res := mustExec(t, x, "counter-1", add{N: 1})
	if res.State.Total != 11 || res.Revision != eventstore.Exact(2) {
		t.Fatalf("after conflict: %+v, want total 11 at revision 2", res)
	}
	if appends, failed := fs.counts(); appends != 3 || failed != 1 {
		t.Fatalf("%d appends, %d failed; want 3 and 1 (one conflict, then the retry)", appends, failed)
	}
	// The cache holds the new state: the next command needs no reload.
	if res := mustExec(t, x, "counter-1", add{N: 1}); res.State.Total != 12 {
		t.Fatalf("total %d, want 12", res.State.Total)
	}
	if _, failed := fs.counts(); failed != 1 {
		t.Fatal("the cache was not updated after the retry")
	}
}

// A decision that appends nothing (or fails) on a cached state is only
// trusted after the stream's tail is read: otherwise a change made by
// another node would be missed silently.
func TestExecuteVerifiesCachedNoOpsAndErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.executor(nil, Options{})
	mustExec(t, x, "counter-1", create{Name: "a"})
	mustExec(t, x, "counter-1", set{Total: 5})

	e.appendDirect("counter-1", counterAdded{N: 2}) // total 7 elsewhere
	res := mustExec(t, x, "counter-1", set{Total: 5})
	if res.State.Total != 5 || len(res.Events) != 1 {
		t.Fatalf("set 5 on a stream at 7: %+v, want one event back to 5", res)
	}

	e.appendDirect("counter-1", counterAdded{N: 10}) // total 15 elsewhere
	res = mustExec(t, x, "counter-1", take{N: 12})
	if res.State.Total != 3 {
		t.Fatalf("take 12 of 15: total %d, want 3", res.State.Total)
	}
}

func TestExecuteGivesUpWithErrConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x0 := e.executor(nil, Options{})
	mustExec(t, x0, "counter-1", create{Name: "a"})
	fs := &faultyStore{Store: e.store}
	fs.before = func(stream string, _ []eventstore.EventData) error {
		e.appendDirect(stream, counterAdded{N: 1}) // someone always gets there first
		return nil
	}
	x := e.executor(fs, Options{MaxAttempts: 3, RetryDelay: time.Microsecond})
	_, err := Execute(e.ctx, x, "counter-1", counterDecider, any(add{N: 1}), meta("r"))
	if !errors.Is(err, ErrConflict) || !errors.Is(err, eventstore.ErrWrongExpectedRevision) {
		t.Fatalf("err = %v, want ErrConflict wrapping the store's wrong-revision error", err)
	}
	if appends, failed := fs.counts(); appends != 3 || failed != 3 {
		t.Fatalf("%d appends, %d failed; want 3 and 3", appends, failed)
	}
}

// Given another writer's event that the store counts when it checks an
// expected revision but does not show its readers yet (the EventStoreDB
// protocol double shows only fsynced events; a follower's reads lag the
// leader), when a command on the stream as it reads loses to it, then the
// executor reads again until the stream shows the revision the store
// reported, and decides on that: a create finds the counter there instead
// of giving up with a conflict after its five quick attempts.
func TestExecuteWaitsForTheRevisionAConflictReports(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.appendDirect("counter-1", counterCreated{Name: "other node's"})
	// The reads show the stream only from the 20th on: far more reads than
	// five attempts make.
	ls := &laggingStore{Store: e.store, stream: "counter-1", hiddenReads: 20}
	x := e.executor(ls, Options{RetryDelay: time.Microsecond})
	_, err := Execute(e.ctx, x, "counter-1", counterDecider, any(create{Name: "mine"}), meta("r"))
	if !errors.Is(err, errExists) {
		t.Fatalf("err = %v, want the decision on the other writer's event (%v)", err, errExists)
	}
	if reads := ls.readCount(); reads < 20 {
		t.Fatalf("%d reads, want the 20 it takes the store to show the event", reads)
	}
	if recs := e.read("counter-1"); len(recs) != 1 {
		t.Fatalf("the stream holds %d events, want only the other writer's", len(recs))
	}
}

// laggingStore shows readers of stream nothing until it has answered
// hiddenReads reads of it, as a store whose readers lag its writers.
type laggingStore struct {
	eventstore.Store
	stream      string
	hiddenReads int
	mu          sync.Mutex
	reads       int
}

func (l *laggingStore) ReadStream(ctx context.Context, stream string, from eventstore.Revision, max int) ([]eventstore.RecordedEvent, error) {
	if stream == l.stream {
		l.mu.Lock()
		l.reads++
		hidden := l.reads < l.hiddenReads
		l.mu.Unlock()
		if hidden {
			return nil, fmt.Errorf("lagging read of %q: %w", stream, eventstore.ErrStreamNotFound)
		}
	}
	return l.Store.ReadStream(ctx, stream, from, max)
}

func (l *laggingStore) readCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reads
}

// An append whose acknowledgement is lost is sent again with the same ids;
// the store recognises it and nothing is stored twice.
func TestExecuteResendsAppendAfterUnknownOutcome(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fs := &faultyStore{Store: e.store}
	var once sync.Once
	fs.after = func(string, []eventstore.EventData) error {
		var err error
		once.Do(func() { err = errors.New("connection reset") })
		return err
	}
	x := e.executor(fs, Options{RetryDelay: time.Microsecond})
	res := mustExec(t, x, "counter-1", create{Name: "a"})
	recs := e.read("counter-1")
	if len(recs) != 1 || res.Revision != eventstore.Exact(0) || res.Position != recs[0].Position {
		t.Fatalf("stored %d events, result %+v; want one event, reported where it is", len(recs), res)
	}
	if appends, _ := fs.counts(); appends != 2 {
		t.Fatalf("%d appends, want 2 (the lost one and its resend)", appends)
	}
}

// Three executors (nodes) hammer one stream: every command lands exactly once.
func TestExecuteConcurrentNodesOnOneStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := []*Executor{
		e.executor(nil, Options{MaxAttempts: 1000, RetryDelay: 100 * time.Microsecond}),
		e.executor(nil, Options{MaxAttempts: 1000, RetryDelay: 100 * time.Microsecond}),
		e.executor(nil, Options{MaxAttempts: 1000, RetryDelay: 100 * time.Microsecond}),
	}
	mustExec(t, nodes[0], "counter-1", create{Name: "a"})
	const workers, adds = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, len(nodes)*workers*adds)
	for _, x := range nodes {
		for w := range workers {
			wg.Go(func() {
				for i := range adds {
					_, err := Execute(e.ctx, x, "counter-1", counterDecider, any(add{N: 1}), meta(fmt.Sprintf("w%d-%d", w, i)))
					if err != nil {
						errs <- err
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := len(nodes) * workers * adds
	if n := len(e.read("counter-1")); n != want+1 {
		t.Fatalf("stream has %d events, want %d", n, want+1)
	}
	res := mustExec(t, nodes[1], "counter-1", add{N: 0})
	if res.State.Total != want {
		t.Fatalf("total %d, want %d", res.State.Total, want)
	}
}

func TestExecuteCacheIsBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fs := &faultyStore{Store: e.store}
	x := e.executor(fs, Options{CacheSize: 2})
	for i := range 5 {
		mustExec(t, x, fmt.Sprintf("counter-%d", i), create{Name: "a"})
	}
	if n := x.cache.len(); n != 2 {
		t.Fatalf("cache holds %d streams, want 2", n)
	}
	// An evicted stream is read again; a cached one is not.
	e.appendDirect("counter-0", counterAdded{N: 4})
	if res := mustExec(t, x, "counter-0", add{N: 1}); res.State.Total != 5 {
		t.Fatalf("evicted stream: total %d, want 5", res.State.Total)
	}
	if _, failed := fs.counts(); failed != 0 {
		t.Fatal("an evicted stream was decided on a stale state")
	}
}

func TestExecuteWithoutCache(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.executor(nil, Options{CacheSize: -1})
	mustExec(t, x, "counter-1", create{Name: "a"})
	e.appendDirect("counter-1", counterAdded{N: 4})
	if res := mustExec(t, x, "counter-1", add{N: 1}); res.State.Total != 5 || x.cache.len() != 0 {
		t.Fatalf("total %d, cache %d; want 5 and an empty cache", res.State.Total, x.cache.len())
	}
}

// With RequestMeta.IdempotencyKey, repeating a command returns its first
// outcome: the retry after a lost response neither fails ("exists") nor
// appends again.
// Without an idempotency key, the events of later calls get greater ids
// (the event store indexes them in order), in the version-8 form of
// eventstore.SequencedEventID; with a key they stay name-derived (version 5).
func TestExecuteUnkeyedEventIDsAscend(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.executor(nil, Options{})
	mustExec(t, x, "counter-1", create{Name: "a"})
	mustExec(t, x, "counter-2", create{Name: "b"})
	mustExec(t, x, "counter-1", add{N: 2})
	mustExec(t, x, "counter-1", add{N: 3})
	ids := []eventstore.EventID{e.read("counter-1")[0].ID, e.read("counter-2")[0].ID}
	for _, r := range e.read("counter-1")[1:] {
		ids = append(ids, r.ID)
	}
	for i, id := range ids {
		if v := uuid.UUID(id).Version(); v != 8 {
			t.Fatalf("event id %d %v: version %d, want 8", i, uuid.UUID(id), v)
		}
		if i > 0 && bytes.Compare(ids[i-1][:], id[:]) >= 0 {
			t.Fatalf("event id %d %v not above the one before, %v", i, uuid.UUID(id), uuid.UUID(ids[i-1]))
		}
	}
}

func TestExecuteWithKeyReturnsFirstOutcome(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.executor(nil, Options{})
	m := meta("r1")
	m.IdempotencyKey = "k-1"
	first, err := Execute(e.ctx, x, "counter-1", counterDecider, any(create{Name: "a"}), m)
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, x, "counter-1", add{N: 2}) // the stream moves on

	again, err := Execute(e.ctx, e.executor(nil, Options{}), "counter-1", counterDecider, any(create{Name: "a"}), m)
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	if len(again.Events) != 1 || again.Events[0].Event != first.Events[0].Event || again.State.Total != 2 {
		t.Fatalf("retry: %+v, want the first attempt's event and the current state", again)
	}
	if n := len(e.read("counter-1")); n != 2 {
		t.Fatalf("stream has %d events, want 2", n)
	}
	// The same key with another command is another command.
	res, err := Execute(e.ctx, x, "counter-1", counterDecider, any(add{N: 1}), m)
	if err != nil || res.State.Total != 3 {
		t.Fatalf("other command with the key: %+v, %v", res, err)
	}
	// Event ids follow the documented scheme.
	want := eventstore.DeriveEventID("key|k-1|counter-1|"+fingerprint(any(create{Name: "a"}))+"|0", 0)
	if got := e.read("counter-1")[0].ID; got != want {
		t.Fatalf("event id %v, want %v", got, want)
	}
}

// A state type with Clone is copied before it is evolved, so an Evolve that
// changes maps in place cannot corrupt the cached state.
func TestExecuteClonesCachedState(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.executor(nil, Options{})
	d := domain.Decider[tally, any]{
		Initial: func() tally { return tally{} },
		Evolve: func(s tally, ev domain.Event) tally {
			if s == nil {
				s = tally{}
			}
			if a, ok := ev.(counterAdded); ok {
				s["n"] += a.N // in place, on purpose
			}
			return s
		},
		Decide: func(_ tally, c any, _ time.Time) ([]domain.Event, error) {
			return []domain.Event{counterAdded{N: c.(add).N}}, nil
		},
	}
	r1, err := Execute(e.ctx, x, "tally-1", d, any(add{N: 1}), meta("r1"))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Execute(e.ctx, x, "tally-1", d, any(add{N: 2}), meta("r2"))
	if err != nil {
		t.Fatal(err)
	}
	if r1.State["n"] != 1 || r2.State["n"] != 3 {
		t.Fatalf("states %v then %v, want 1 then 3", r1.State, r2.State)
	}
}

type tally map[string]int

func (t tally) Clone() tally {
	c := make(tally, len(t))
	for k, v := range t {
		c[k] = v
	}
	return c
}

func TestNewRequiresAppEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, err := New(e.store, domain.NewRegistry(), Options{}); err == nil {
		t.Fatal("New accepted a registry without the app's events")
	}
}

func mustExec(t testing.TB, x *Executor, stream string, cmd any) Result[counter] {
	t.Helper()
	res, err := Execute(t.Context(), x, stream, counterDecider, cmd, meta("req-"+stream))
	if err != nil {
		t.Fatalf("%s %#v: %v", stream, cmd, err)
	}
	return res
}

// readCountingStore is the real store, counting stream reads.
type readCountingStore struct {
	eventstore.Store
	mu    sync.Mutex
	reads int
}

func (r *readCountingStore) ReadStream(ctx context.Context, stream string, from eventstore.Revision, max int) ([]eventstore.RecordedEvent, error) {
	r.mu.Lock()
	r.reads++
	r.mu.Unlock()
	return r.Store.ReadStream(ctx, stream, from, max)
}

// A command on a stream its caller has just named (NewStream) is decided on
// the initial state without reading the stream.
func TestExecuteNewStreamSkipsTheRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rs := &readCountingStore{Store: e.store}
	x := e.executor(rs, Options{CacheSize: -1})
	m := meta("r-new")
	m.NewStream = true
	res, err := Execute(e.ctx, x, "counter-new", counterDecider, any(create{Name: "n"}), m)
	if err != nil || !res.State.Exists || res.Revision != eventstore.Exact(0) {
		t.Fatalf("create on a new stream: %+v, %v", res, err)
	}
	if rs.reads != 0 {
		t.Fatalf("%d stream reads, want none", rs.reads)
	}
	if got := e.read("counter-new"); len(got) != 1 {
		t.Fatalf("stream holds %d events, want 1", len(got))
	}
}

// When a stream said to be new has events after all, the append's
// expectation catches it and the command is decided on the real state.
func TestExecuteNewStreamThatExists(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.executor(nil, Options{CacheSize: -1, RetryDelay: time.Microsecond})
	e.appendDirect("counter-old", counterCreated{Name: "old"}, counterAdded{N: 4})
	m := meta("r-old")
	m.NewStream = true
	if _, err := Execute(e.ctx, x, "counter-old", counterDecider, any(create{Name: "n"}), m); !errors.Is(err, errExists) {
		t.Fatalf("create on an existing stream said to be new: %v, want errExists", err)
	}
	res, err := Execute(e.ctx, x, "counter-old", counterDecider, any(add{N: 1}), m)
	if err != nil || res.State.Total != 5 || res.Revision != eventstore.Exact(2) {
		t.Fatalf("add on an existing stream said to be new: %+v, %v; want total 5 at revision 2", res, err)
	}
	if _, err := Execute(e.ctx, x, "counter-old", counterDecider, any(add{N: 0}), m); err != nil {
		t.Fatalf("no-op on an existing stream said to be new: %v", err)
	}
	if got := e.read("counter-old"); len(got) != 3 {
		t.Fatalf("stream holds %d events, want 3", len(got))
	}
}

func TestCallNoncesAreUnique(t *testing.T) {
	t.Parallel()
	const workers, each = 4, 2500
	type call struct {
		nonce string
		seq   uint64
	}
	got := make(chan call, workers*each)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				n, seq := nextCall()
				got <- call{n, seq}
			}
		})
	}
	wg.Wait()
	close(got)
	seen, seqs := map[string]bool{}, map[uint64]bool{}
	for c := range got {
		if seen[c.nonce] || seqs[c.seq] {
			t.Fatalf("call %q (sequence %d) made twice", c.nonce, c.seq)
		}
		if !strings.HasPrefix(c.nonce, callNonces.prefix) || len(callNonces.prefix) != 33 {
			t.Fatalf("nonce %q: want the process prefix %q (32 hex digits and a dot)", c.nonce, callNonces.prefix)
		}
		if c.seq <= callNonces.base {
			t.Fatalf("sequence %d not above the process base %d", c.seq, callNonces.base)
		}
		seen[c.nonce], seqs[c.seq] = true, true
	}
	if len(seen) != workers*each {
		t.Fatalf("%d nonces, want %d", len(seen), workers*each)
	}
}
