package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"tvsm/eventstore"
)

// memStore is a minimal in-memory reference store. It exists to check the
// suite itself: a correct store must pass it, and the suite must not hang.

type memData struct {
	mu      sync.Mutex
	log     []eventstore.RecordedEvent
	streams map[string][]int           // stream -> indexes into log
	ids     map[eventstore.EventID]int // event ID -> index into log
	changed chan struct{}              // closed and replaced on every append
}

func newMemData() *memData {
	return &memData{streams: map[string][]int{}, ids: map[eventstore.EventID]int{}, changed: make(chan struct{})}
}

type memStore struct {
	d      *memData
	closed chan struct{}
	once   sync.Once
}

func openMem(d *memData) *memStore { return &memStore{d: d, closed: make(chan struct{})} }

func (s *memStore) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

func (s *memStore) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

func (s *memStore) Head(context.Context) (eventstore.Position, error) {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	return lastPosition(s.d.log), nil
}

func (s *memStore) Append(ctx context.Context, stream string, expect eventstore.Revision, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	if err := eventstore.ValidateAppend(stream, events); err != nil {
		return eventstore.AppendResult{}, err
	}
	if s.isClosed() {
		return eventstore.AppendResult{}, eventstore.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return eventstore.AppendResult{}, err
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	idx := d.streams[stream]

	if first, ok := d.ids[events[0].ID]; ok {
		// A retry: the same events, consecutive, in this stream, placed
		// where expect says.
		r0 := d.log[first].Revision
		placed := expect.IsAny() ||
			expect.IsNoStream() && r0 == 0 ||
			expect.IsStreamExists() && r0 > 0
		if n, ok := expect.Exact(); ok {
			placed = r0 == n+1
		}
		retry := placed && d.log[first].Stream == stream && int(r0)+len(events) <= len(idx)
		for i := 0; retry && i < len(events); i++ {
			retry = d.log[idx[int(r0)+i]].ID == events[i].ID
		}
		if retry {
			last := d.log[idx[int(r0)+len(events)-1]]
			return eventstore.AppendResult{NextExpected: last.Revision, Position: last.Position}, nil
		}
	}
	current, exists := uint64(len(idx))-1, len(idx) > 0
	if !expect.Satisfied(current, exists) {
		actual := eventstore.NoStream
		if exists {
			actual = eventstore.Exact(current)
		}
		return eventstore.AppendResult{}, &eventstore.WrongRevisionError{Stream: stream, Expected: expect, Actual: actual}
	}
	for _, ev := range events {
		if _, dup := d.ids[ev.ID]; dup {
			return eventstore.AppendResult{}, fmt.Errorf("%w: %v", eventstore.ErrDuplicateEventID, ev.ID)
		}
	}
	now := time.Now().UTC()
	for _, ev := range events {
		n := uint64(len(d.log) + 1)
		rec := eventstore.RecordedEvent{
			ID: ev.ID, Stream: stream, Revision: uint64(len(idx)),
			Position: eventstore.Position{Commit: n, Prepare: n},
			Type:     ev.Type, Data: append([]byte(nil), ev.Data...), Metadata: append([]byte(nil), ev.Metadata...),
			Created: now,
		}
		d.ids[ev.ID] = len(d.log)
		idx = append(idx, len(d.log))
		d.log = append(d.log, rec)
	}
	d.streams[stream] = idx
	close(d.changed)
	d.changed = make(chan struct{})
	last := d.log[len(d.log)-1]
	return eventstore.AppendResult{NextExpected: last.Revision, Position: last.Position}, nil
}

func (s *memStore) ReadStream(ctx context.Context, stream string, from eventstore.Revision, max int) ([]eventstore.RecordedEvent, error) {
	if s.isClosed() {
		return nil, eventstore.ErrClosed
	}
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	idx := s.d.streams[stream]
	if len(idx) == 0 {
		return nil, eventstore.ErrStreamNotFound
	}
	start, _ := from.Exact()
	var out []eventstore.RecordedEvent
	for r := start; r < uint64(len(idx)) && (max <= 0 || len(out) < max); r++ {
		out = append(out, s.d.log[idx[r]])
	}
	return out, nil
}

func (s *memStore) SubscribeAll(ctx context.Context, after eventstore.Position, filter eventstore.Filter) (eventstore.Subscription, error) {
	if s.isClosed() {
		return nil, eventstore.ErrClosed
	}
	return &memSub{s: s, ctx: ctx, next: int(after.Commit), checkpoint: after, filter: filter, closed: make(chan struct{})}, nil
}

type memSub struct {
	s          *memStore
	ctx        context.Context
	next       int // index into log of the next event to scan
	checkpoint eventstore.Position
	filter     eventstore.Filter
	caughtUp   bool
	closed     chan struct{}
	once       sync.Once
}

func (m *memSub) Close() error {
	m.once.Do(func() { close(m.closed) })
	return nil
}

func (m *memSub) Recv(ctx context.Context) (eventstore.Batch, error) {
	for {
		select {
		case <-m.closed:
			return eventstore.Batch{}, eventstore.ErrClosed
		case <-m.s.closed:
			return eventstore.Batch{}, eventstore.ErrClosed
		case <-m.ctx.Done():
			return eventstore.Batch{}, m.ctx.Err()
		case <-ctx.Done():
			return eventstore.Batch{}, ctx.Err()
		default:
		}
		d := m.s.d
		d.mu.Lock()
		scanned := d.log[m.next:min(len(d.log), m.next+100)]
		m.next += len(scanned)
		atHead := m.next == len(d.log)
		changed := d.changed
		d.mu.Unlock()

		if len(scanned) > 0 || !m.caughtUp {
			var b eventstore.Batch
			for _, ev := range scanned {
				if m.filter.Match(ev.Stream, ev.Type) {
					b.Events = append(b.Events, ev)
				}
			}
			if len(scanned) > 0 {
				m.checkpoint = scanned[len(scanned)-1].Position
			}
			m.caughtUp = m.caughtUp || atHead
			b.Checkpoint, b.CaughtUp = m.checkpoint, m.caughtUp
			return b, nil
		}
		select {
		case <-changed:
		case <-m.closed:
		case <-m.s.closed:
		case <-m.ctx.Done():
		case <-ctx.Done():
		}
	}
}

func TestMemStore(t *testing.T) {
	Run(t, func(t *testing.T) eventstore.Store {
		s := openMem(newMemData())
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, Features{
		DensePositions: true,
		Reopen: func(t *testing.T, s eventstore.Store) eventstore.Store {
			old := s.(*memStore)
			_ = old.Close()
			s2 := openMem(old.d)
			t.Cleanup(func() { _ = s2.Close() })
			return s2
		},
	})
}

// TestMemStoreShared runs the suite on one store shared by all tests and
// holding foreign events, as a real server would.
func TestMemStoreShared(t *testing.T) {
	shared := openMem(newMemData())
	ctx := context.Background()
	for i := range 50 {
		ev := eventstore.EventData{ID: eventstore.NewEventID(), Type: "OrderPlaced.v1"}
		if _, err := shared.Append(ctx, fmt.Sprintf("foreign-%d", i%5), eventstore.Any, ev); err != nil {
			t.Fatal(err)
		}
	}
	Run(t, func(t *testing.T) eventstore.Store { return shared }, Features{Shared: true})
}
