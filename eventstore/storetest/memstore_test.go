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
	res, err := s.appendParts(ctx, []eventstore.StreamAppend{{Stream: stream, Expect: expect, Events: events}})
	if err != nil {
		return eventstore.AppendResult{}, err
	}
	return res[0], nil
}

func (s *memStore) AppendMulti(ctx context.Context, parts ...eventstore.StreamAppend) ([]eventstore.AppendResult, error) {
	if err := eventstore.ValidateAppendMulti(parts); err != nil {
		return nil, err
	}
	return s.appendParts(ctx, parts)
}

// appendParts appends every part or none, under one lock.
func (s *memStore) appendParts(ctx context.Context, parts []eventstore.StreamAppend) ([]eventstore.AppendResult, error) {
	if s.isClosed() {
		return nil, eventstore.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	results := make([]eventstore.AppendResult, len(parts))
	retries := 0
	for i, p := range parts {
		if res, ok := d.retry(p); ok {
			results[i] = res
			retries++
		}
	}
	switch {
	case retries == len(parts):
		return results, nil
	case retries > 0:
		return nil, fmt.Errorf("%w: %d of %d parts are stored appends", eventstore.ErrDuplicateEventID, retries, len(parts))
	}
	for _, p := range parts {
		if err := d.check(p); err != nil {
			return nil, err
		}
	}
	now := time.Now().UTC()
	for i, p := range parts {
		results[i] = d.write(p, now)
	}
	close(d.changed)
	d.changed = make(chan struct{})
	return results, nil
}

// retry reports whether p's events are stored: the same events,
// consecutive, in p's stream, placed where p's expectation says.
func (d *memData) retry(p eventstore.StreamAppend) (eventstore.AppendResult, bool) {
	first, ok := d.ids[p.Events[0].ID]
	if !ok {
		return eventstore.AppendResult{}, false
	}
	idx := d.streams[p.Stream]
	r0 := d.log[first].Revision
	placed := p.Expect.IsAny() ||
		p.Expect.IsNoStream() && r0 == 0 ||
		p.Expect.IsStreamExists() && r0 > 0
	if n, ok := p.Expect.Exact(); ok {
		placed = r0 == n+1
	}
	retry := placed && d.log[first].Stream == p.Stream && int(r0)+len(p.Events) <= len(idx)
	for i := 0; retry && i < len(p.Events); i++ {
		retry = d.log[idx[int(r0)+i]].ID == p.Events[i].ID
	}
	if !retry {
		return eventstore.AppendResult{}, false
	}
	last := d.log[idx[int(r0)+len(p.Events)-1]]
	return eventstore.AppendResult{NextExpected: last.Revision, Position: last.Position}, true
}

// check checks p's expectation and that none of its IDs is stored.
func (d *memData) check(p eventstore.StreamAppend) error {
	idx := d.streams[p.Stream]
	current, exists := uint64(len(idx))-1, len(idx) > 0
	if !p.Expect.Satisfied(current, exists) {
		actual := eventstore.NoStream
		if exists {
			actual = eventstore.Exact(current)
		}
		return &eventstore.WrongRevisionError{Stream: p.Stream, Expected: p.Expect, Actual: actual}
	}
	for _, ev := range p.Events {
		if _, dup := d.ids[ev.ID]; dup {
			return fmt.Errorf("%w: %v", eventstore.ErrDuplicateEventID, ev.ID)
		}
	}
	return nil
}

// write appends p's events to the log.
func (d *memData) write(p eventstore.StreamAppend, now time.Time) eventstore.AppendResult {
	idx := d.streams[p.Stream]
	for _, ev := range p.Events {
		n := uint64(len(d.log) + 1)
		rec := eventstore.RecordedEvent{
			ID: ev.ID, Stream: p.Stream, Revision: uint64(len(idx)),
			Position: eventstore.Position{Commit: n, Prepare: n},
			Type:     ev.Type, Data: append([]byte(nil), ev.Data...), Metadata: append([]byte(nil), ev.Metadata...),
			Created: now,
		}
		d.ids[ev.ID] = len(d.log)
		idx = append(idx, len(d.log))
		d.log = append(d.log, rec)
	}
	d.streams[p.Stream] = idx
	last := d.log[len(d.log)-1]
	return eventstore.AppendResult{NextExpected: last.Revision, Position: last.Position}
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
		MultiAppend:    true,
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
	Run(t, func(t *testing.T) eventstore.Store { return shared }, Features{Shared: true, MultiAppend: true})
}
