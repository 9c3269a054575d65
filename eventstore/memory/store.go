// Package memory is an event store held in memory, for tests and tools: it
// loses everything when the process exits and is never a production backend.
//
// It keeps the contract of eventstore.Store as the embedded backend does,
// and passes the same conformance suite (eventstore/storetest): atomic
// appends with expected revisions, caller-supplied event ids with the
// port's retry and duplicate rules, dense positions 1, 2, 3, ... (Commit ==
// Prepare), catch-up-then-live subscriptions, eventstore.MultiAppender,
// eventstore.HeadReader and eventstore.Tombstoner. "Durable" here means
// held for as long as the store's data lives: an appended event stays
// until the process ends (or its stream is tombstoned), and Reopen hands
// the same data to a new Store, as restarting a process on a durable
// backend would.
package memory

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"tvsm/eventstore"
)

// Store is the in-memory backend. It implements eventstore.Store,
// eventstore.MultiAppender, eventstore.HeadReader and
// eventstore.Tombstoner. Safe for concurrent use.
type Store struct {
	log     *eventLog
	closing chan struct{}
	once    sync.Once
	commits atomic.Uint64 // acknowledged appends that stored events
	appends atomic.Uint64 // acknowledged appends, retries included
}

// New returns an empty store.
func New() *Store { return open(newEventLog()) }

func open(l *eventLog) *Store { return &Store{log: l, closing: make(chan struct{})} }

// Reopen closes s and returns a new Store on the same events, as if the
// process had restarted on a durable backend: positions, revisions and
// event ids continue, and s and its subscriptions fail with ErrClosed.
func (s *Store) Reopen() *Store {
	_ = s.Close()
	return open(s.log)
}

// Close ends the store's subscriptions; every later call of a method of s
// fails with ErrClosed. Appends in flight either complete or fail with
// ErrClosed. The events stay for a store that Reopen returns.
func (s *Store) Close() error {
	s.once.Do(func() { close(s.closing) })
	return nil
}

func (s *Store) closed() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// SequentialPositions implements eventstore.SequentialPositions.
func (s *Store) SequentialPositions() {}

// Head returns the position of the last event (Beginning when empty).
func (s *Store) Head(context.Context) (eventstore.Position, error) {
	if s.closed() {
		return eventstore.Position{}, fmt.Errorf("memory: head: %w", eventstore.ErrClosed)
	}
	return s.log.head(), nil
}

// Append implements eventstore.Store. It is a multi-stream append of one
// part.
func (s *Store) Append(ctx context.Context, stream string, expect eventstore.Revision, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	if err := eventstore.ValidateAppend(stream, events); err != nil {
		return eventstore.AppendResult{}, err
	}
	parts := [1]eventstore.StreamAppend{{Stream: stream, Expect: expect, Events: events}}
	var results [1]eventstore.AppendResult
	if err := s.append(ctx, parts[:], results[:]); err != nil {
		return eventstore.AppendResult{}, err
	}
	return results[0], nil
}

// AppendMulti implements eventstore.MultiAppender.
func (s *Store) AppendMulti(ctx context.Context, parts ...eventstore.StreamAppend) ([]eventstore.AppendResult, error) {
	if err := eventstore.ValidateAppendMulti(parts); err != nil {
		return nil, err
	}
	results := make([]eventstore.AppendResult, len(parts))
	if err := s.append(ctx, parts, results); err != nil {
		return nil, err
	}
	return results, nil
}

func (s *Store) append(ctx context.Context, parts []eventstore.StreamAppend, results []eventstore.AppendResult) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	wrote, err := s.log.append(s.closing, parts, results, time.Now())
	if err != nil {
		return err
	}
	if wrote {
		s.commits.Add(1)
	}
	s.appends.Add(1)
	return nil
}

// Stats reports how many commits and appends the store has acknowledged
// since New or Reopen, as the embedded store's Stats does: an append is a
// commit when it stored events, not when it was a retry answered without
// writing; an AppendMulti counts once. Tests use it to tell how many
// writes an operation made.
func (s *Store) Stats() (commits, appends uint64) {
	return s.commits.Load(), s.appends.Load()
}

// ReadStream implements eventstore.Store. The events are copies the caller
// may keep and modify.
func (s *Store) ReadStream(ctx context.Context, stream string, from eventstore.Revision, max int) ([]eventstore.RecordedEvent, error) {
	start, err := eventstore.ValidateRead(stream, from)
	if err != nil {
		return nil, err
	}
	if s.closed() {
		return nil, fmt.Errorf("memory: read %q: %w", stream, eventstore.ErrClosed)
	}
	events, err := s.log.readStream(stream, start, max)
	if err != nil {
		return nil, fmt.Errorf("memory: read %q: %w", stream, err)
	}
	return events, nil
}

// Tombstone implements eventstore.Tombstoner. The stream's events leave
// the store at once: their entries in the log keep only their positions,
// so that positions and checkpoints stay as they were, and subscriptions
// skip them (as EventStoreDB's $all after a scavenge). Their event ids stay
// taken. What a subscriber or reader already received stays with it.
func (s *Store) Tombstone(ctx context.Context, stream string) error {
	if err := eventstore.ValidateStreamName(stream); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.log.tombstone(s.closing, stream)
}
