package sealed

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"tvsm/domain"
	"tvsm/eventstore"
)

// Store is an event store whose events' personal values are sealed on
// their way in and opened on their way out: the one place encryption
// happens. Everything above it (the recorder, folds, projections, history)
// sees plain events, and an erased subject's values as
// domain.ErasedValue; everything below it (the backend's files, its
// copies and backups) holds ciphertext only.
type Store struct {
	inner  eventstore.Store
	keys   *Keyring
	recent *openedCache
}

// headStore is a store that reports its head, as every backend does.
type headStore interface {
	eventstore.Store
	eventstore.HeadReader
}

// Wrap returns inner sealed with keys. The result keeps inner's head and,
// when inner has it, its multi-stream append.
func Wrap(inner eventstore.Store, keys *Keyring) eventstore.Store {
	s := &Store{inner: inner, keys: keys, recent: newOpenedCache(8192)}
	hs, head := inner.(headStore)
	multi, isMulti := inner.(eventstore.MultiAppender)
	switch {
	case head && isMulti:
		return &multiHeadStore{headOf{s, hs}, multi}
	case head:
		return &headOf{s, hs}
	case isMulti:
		return &multiStore{s, multi}
	}
	return s
}

type headOf struct {
	*Store
	hs headStore
}

func (s *headOf) Head(ctx context.Context) (eventstore.Position, error) { return s.hs.Head(ctx) }

type multiStore struct {
	*Store
	multi eventstore.MultiAppender
}

func (s *multiStore) AppendMulti(ctx context.Context, parts ...eventstore.StreamAppend) ([]eventstore.AppendResult, error) {
	return s.appendMulti(ctx, s.multi, parts)
}

type multiHeadStore struct {
	headOf
	multi eventstore.MultiAppender
}

func (s *multiHeadStore) AppendMulti(ctx context.Context, parts ...eventstore.StreamAppend) ([]eventstore.AppendResult, error) {
	return s.appendMulti(ctx, s.multi, parts)
}

// Keys is the keyring the store seals with.
func (s *Store) Keys() *Keyring { return s.keys }

// Append implements eventstore.Store.
func (s *Store) Append(ctx context.Context, stream string, expect eventstore.Revision, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	sealed, err := s.sealAll(ctx, stream, events)
	if err != nil {
		return eventstore.AppendResult{}, err
	}
	return s.inner.Append(ctx, stream, expect, sealed...)
}

func (s *Store) appendMulti(ctx context.Context, multi eventstore.MultiAppender, parts []eventstore.StreamAppend) ([]eventstore.AppendResult, error) {
	out := make([]eventstore.StreamAppend, len(parts))
	for i, p := range parts {
		events, err := s.sealAll(ctx, p.Stream, p.Events)
		if err != nil {
			return nil, err
		}
		out[i] = p
		out[i].Events = events
	}
	return multi.AppendMulti(ctx, out...)
}

// sealAll returns events with their personal values sealed, sharing the
// caller's slice when none has any (the caller's events are never
// changed: a retried append resends them).
func (s *Store) sealAll(ctx context.Context, stream string, events []eventstore.EventData) ([]eventstore.EventData, error) {
	out := events
	for i, e := range events {
		data, err := s.keys.seal(ctx, stream, e.Type, e.Data)
		if err != nil {
			return nil, err
		}
		if same(data, e.Data) {
			continue
		}
		if &out[0] == &events[0] {
			out = slices.Clone(events)
		}
		out[i].Data = data
	}
	return out, nil
}

// same reports whether b is a, not a copy: what seal and open return when
// they change nothing.
func same(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// ReadStream implements eventstore.Store.
func (s *Store) ReadStream(ctx context.Context, stream string, from eventstore.Revision, max int) ([]eventstore.RecordedEvent, error) {
	recs, err := s.inner.ReadStream(ctx, stream, from, max)
	if err != nil {
		return nil, err
	}
	return s.openAll(ctx, recs)
}

// SubscribeAll implements eventstore.Store.
func (s *Store) SubscribeAll(ctx context.Context, after eventstore.Position, filter eventstore.Filter) (eventstore.Subscription, error) {
	sub, err := s.inner.SubscribeAll(ctx, after, filter)
	if err != nil {
		return nil, err
	}
	return &subscription{Subscription: sub, s: s}, nil
}

type subscription struct {
	eventstore.Subscription
	s *Store
}

func (sub *subscription) Recv(ctx context.Context) (eventstore.Batch, error) {
	b, err := sub.Subscription.Recv(ctx)
	if err != nil {
		return b, err
	}
	b.Events, err = sub.s.openAll(ctx, b.Events)
	return b, err
}

// openAll returns recs with sealed values opened, copying the slice (not
// the events' shared data) only when one was sealed. An erasure in recs
// drops the subject's key from this node's cache: another node may have
// erased it. A long batch (a catch-up, a replay) is opened on every core:
// opening is independent per event.
func (s *Store) openAll(ctx context.Context, recs []eventstore.RecordedEvent) ([]eventstore.RecordedEvent, error) {
	for i := range recs {
		if recs[i].Type == domain.AccountErasedType {
			if id, ok := accountOf(recs[i].Stream); ok {
				s.keys.Forget(id)
			}
		}
	}
	workers := runtime.GOMAXPROCS(0)
	if len(recs) < parallelOpen || workers == 1 {
		out := recs
		for i := range recs {
			data, err := s.openOne(ctx, &recs[i], true)
			if err != nil {
				return nil, err
			}
			if same(data, recs[i].Data) {
				continue
			}
			if &out[0] == &recs[0] {
				out = slices.Clone(recs)
			}
			out[i].Data = data
		}
		return out, nil
	}
	out := slices.Clone(recs)
	errs := make([]error, workers)
	chunk := (len(recs) + workers - 1) / workers
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*chunk, min((w+1)*chunk, len(recs))
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				data, err := s.openOne(ctx, &recs[i], false)
				if err != nil {
					errs[w] = err
					return
				}
				out[i].Data = data
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// parallelOpen is the batch length from which openAll uses every core.
const parallelOpen = 256

// openOne returns rec's data with its sealed values opened; rec.Data
// itself when it holds none. keep shares what it opens with the other
// subscriptions (live batches, which they all receive at about the same
// time; a long catch-up batch is rarely read twice, and keeping it would
// only serialise its workers on the cache).
func (s *Store) openOne(ctx context.Context, rec *eventstore.RecordedEvent, keep bool) ([]byte, error) {
	if rec.Type == domain.AccountErasedType {
		return rec.Data, nil
	}
	if !mayBeSealed(rec.Data) {
		data, _, err := s.keys.redactPlain(rec.Type, rec.Data)
		return data, err
	}
	gen := s.keys.erasures.Load()
	if data, ok := s.recent.get(rec.Position, gen); ok {
		return data, nil
	}
	data, erased, err := s.keys.open(ctx, rec.Stream, rec.Type, rec.Data)
	if err != nil {
		return nil, &OpenError{Stream: rec.Stream, Revision: rec.Revision, Err: err}
	}
	if keep && !erased && !same(data, rec.Data) {
		s.recent.put(rec.Position, data, gen)
	}
	return data, nil
}

// accountOf returns the id of an account stream's account.
func accountOf(stream string) (int64, bool) {
	rest, ok := strings.CutPrefix(stream, "account-")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	return id, err == nil
}

// OpenError reports a stored event whose sealed values do not open: the
// master key or the key store does not belong to this log, or the event
// was altered. Erased subjects are not an error.
type OpenError struct {
	Stream   string
	Revision uint64
	Err      error
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("sealed: %s@%d: %v", e.Stream, e.Revision, e.Err)
}

func (e *OpenError) Unwrap() error { return e.Err }

// openedCache keeps the opened data of the events opened last, by
// position: the node's subscriptions (read model, statistics, dispatcher)
// receive the same events at about the same time, and open each once
// between them. An entry is served only under the generation it was put
// with, the keyring's count of erasures: after an erasure, here or seen in
// the log, nothing opened before it is served again.
type openedCache struct {
	mu    sync.Mutex
	data  map[eventstore.Position]openedEntry
	order []eventstore.Position // a ring: the oldest is evicted first
	next  int
}

type openedEntry struct {
	gen  uint64
	data []byte
}

func newOpenedCache(size int) *openedCache {
	return &openedCache{data: make(map[eventstore.Position]openedEntry, size), order: make([]eventstore.Position, size)}
}

func (c *openedCache) get(p eventstore.Position, gen uint64) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.data[p]
	return e.data, ok && e.gen == gen
}

func (c *openedCache) put(p eventstore.Position, d []byte, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.data[p]; !ok {
		delete(c.data, c.order[c.next])
		c.order[c.next] = p
		c.next = (c.next + 1) % len(c.order)
	}
	c.data[p] = openedEntry{gen: gen, data: d}
}
