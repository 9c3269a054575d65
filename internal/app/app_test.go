package app

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
	"tvsm/eventstore/memory"
	"tvsm/internal/testkit/testutil"
)

// The tests use a tiny counter aggregate instead of the real ones.

const (
	counterCreatedType = "CounterCreated.v1"
	counterAddedType   = "CounterAdded.v1"
)

type counterCreated struct {
	Name string `json:"name"`
}

func (counterCreated) EventType() string { return counterCreatedType }

type counterAdded struct {
	N int `json:"n"`
}

func (counterAdded) EventType() string { return counterAddedType }

type counter struct {
	Exists bool
	Name   string
	Total  int
}

// Commands.
type (
	create struct{ Name string }
	add    struct{ N int }     // N == 0 changes nothing
	set    struct{ Total int } // appends the difference, nothing when equal
	take   struct{ N int }     // fails unless Total >= N
)

var (
	errExists       = errors.New("counter exists")
	errNotFound     = errors.New("counter not found")
	errInsufficient = errors.New("insufficient total")
)

var counterDecider = domain.Decider[counter, any]{
	Initial: func() counter { return counter{} },
	Evolve: func(s counter, e domain.Event) counter {
		switch e := e.(type) {
		case counterCreated:
			s.Exists, s.Name = true, e.Name
		case counterAdded:
			s.Total += e.N
		}
		return s
	},
	Decide: func(s counter, c any, _ time.Time) ([]domain.Event, error) {
		if _, ok := c.(create); !ok && !s.Exists {
			return nil, errNotFound
		}
		switch c := c.(type) {
		case create:
			if s.Exists {
				return nil, errExists
			}
			return []domain.Event{counterCreated{Name: c.Name}}, nil
		case add:
			if c.N == 0 {
				return nil, nil
			}
			return []domain.Event{counterAdded{N: c.N}}, nil
		case set:
			if c.Total == s.Total {
				return nil, nil
			}
			return []domain.Event{counterAdded{N: c.Total - s.Total}}, nil
		case take:
			if s.Total < c.N {
				return nil, errInsufficient
			}
			return []domain.Event{counterAdded{N: -c.N}}, nil
		}
		return nil, errors.New("unknown command")
	},
}

func newRegistry() *domain.Registry {
	r := domain.NewRegistry()
	RegisterEvents(r)
	r.Register(counterCreatedType, func() domain.Event { return counterCreated{} })
	r.Register(counterAddedType, func() domain.Event { return counterAdded{} })
	return r
}

// testStore is what the tests use of a store: the port and the head. Tests
// of atomic multi-stream appends, or of how many commits and appends the
// store made, need more (needMultiAppend, stats).
type testStore interface {
	eventstore.Store
	eventstore.HeadReader
}

// env is a store with a registry.
type env struct {
	t     testing.TB
	ctx   context.Context
	store testStore
	reg   *domain.Registry
	clock *testutil.Clock
}

// newEnv is an env on the in-memory store: the tests exercise the
// executor's logic, which needs the store's contract, not its disk. When
// TestOnEventStoreDB runs the tests again, it is on the esdb backend and a
// protocol double of its own instead (see esdb_test.go).
func newEnv(t testing.TB) *env {
	t.Helper()
	if onESDB() {
		return newESDBEnv(t)
	}
	s := memory.New()
	t.Cleanup(func() { s.Close() })
	return newEnvOn(t, s)
}

// stats returns the commits and appends the store made; tests that count
// them need a store that tells (not EventStoreDB).
func (e *env) stats() (commits, appends uint64) {
	e.t.Helper()
	s, ok := e.store.(interface{ Stats() (uint64, uint64) })
	if !ok {
		e.t.Skip("the store does not count its commits")
	}
	return s.Stats()
}

// multi returns the store's atomic multi-stream append, and skips a test
// that needs one on a store without.
func (e *env) multi() eventstore.MultiAppender {
	e.t.Helper()
	m, ok := e.store.(eventstore.MultiAppender)
	if !ok {
		e.t.Skip("the store cannot append to several streams atomically")
	}
	return m
}

// newEmbeddedEnv is an env on the embedded store in a temporary directory,
// for benchmarks of the executor as it runs in production (appends wait
// for fsyncs).
func newEmbeddedEnv(t testing.TB) *env {
	t.Helper()
	s, err := embedded.Open(t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return newEnvOn(t, s)
}

func newEnvOn(t testing.TB, s testStore) *env {
	return &env{t: t, ctx: context.Background(), store: s, reg: newRegistry(), clock: testutil.NewClock(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))}
}

// executor returns a new Executor (a new "node") over store, with the env's
// clock unless opts sets one.
func (e *env) executor(store eventstore.Store, opts Options) *Executor {
	e.t.Helper()
	if store == nil {
		store = e.store
	}
	if opts.Clock == nil {
		opts.Clock = e.clock.Now
	}
	x, err := New(store, e.reg, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return x
}

func meta(requestID string) RequestMeta {
	return RequestMeta{Actor: domain.AdminActor("alice"), RequestID: requestID}
}

// read returns the stored events of stream (none when it does not exist).
func (e *env) read(stream string) []eventstore.RecordedEvent {
	e.t.Helper()
	recs, err := e.store.ReadStream(e.ctx, stream, eventstore.Start, 0)
	if errors.Is(err, eventstore.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return recs
}

// eventsAfter returns the events of the log after position after (sparse
// positions cannot be counted by subtraction).
func (e *env) eventsAfter(after eventstore.Position) []eventstore.RecordedEvent {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	sub, err := e.store.SubscribeAll(ctx, after, eventstore.Filter{})
	if err != nil {
		e.t.Fatal(err)
	}
	defer sub.Close()
	var out []eventstore.RecordedEvent
	for {
		b, err := sub.Recv(ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, b.Events...)
		if b.CaughtUp {
			return out
		}
	}
}

// appendDirect appends events to stream as another writer would, bypassing
// any Executor.
func (e *env) appendDirect(stream string, events ...domain.Event) eventstore.AppendResult {
	e.t.Helper()
	recs := e.read(stream)
	expect := eventstore.NoStream
	if len(recs) > 0 {
		expect = eventstore.Exact(recs[len(recs)-1].Revision)
	}
	md, err := domain.EncodeMetadata(domain.Envelope{OccurredAt: e.clock.Now(), Actor: domain.SystemActor(), RequestID: "other-writer"})
	if err != nil {
		e.t.Fatal(err)
	}
	data := make([]eventstore.EventData, len(events))
	for i, ev := range events {
		typ, body, err := e.reg.Encode(ev)
		if err != nil {
			e.t.Fatal(err)
		}
		data[i] = eventstore.EventData{ID: eventstore.NewEventID(), Type: typ, Data: body, Metadata: md}
	}
	res, err := e.store.Append(e.ctx, stream, expect, data...)
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

// faultyStore wraps the real store to inject failures around appends.
type faultyStore struct {
	eventstore.Store
	mu sync.Mutex
	// before runs before an append; a non-nil error fails the append
	// without storing anything.
	before func(stream string, events []eventstore.EventData) error
	// after runs after a successful append; a non-nil error replaces the
	// result, as when the acknowledgement is lost.
	after   func(stream string, events []eventstore.EventData) error
	appends int
	failed  int
}

func (f *faultyStore) Append(ctx context.Context, stream string, expect eventstore.Revision, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	f.mu.Lock()
	before, after := f.before, f.after
	f.appends++
	f.mu.Unlock()
	if before != nil {
		if err := before(stream, events); err != nil {
			return eventstore.AppendResult{}, err
		}
	}
	res, err := f.Store.Append(ctx, stream, expect, events...)
	if err != nil {
		f.mu.Lock()
		f.failed++
		f.mu.Unlock()
		return res, err
	}
	if after != nil {
		if err := after(stream, events); err != nil {
			return eventstore.AppendResult{}, err
		}
	}
	return res, nil
}

func (f *faultyStore) counts() (appends, failed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.appends, f.failed
}
