package embedded

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"tvsm/eventstore"
)

type appendReq struct {
	ctx    interface{ Err() error }
	stream string
	expect eventstore.Revision
	events []eventstore.EventData
	done   chan appendResp
}

type appendResp struct {
	res eventstore.AppendResult
	err error
}

// storeStats are counters for metrics and benchmarks.
type storeStats struct {
	groups  atomic.Uint64 // fsynced batches
	appends atomic.Uint64 // acknowledged appends (including idempotent no-ops)
}

// Stats reports how many group commits and appends the store has done since
// Open; appends/groups is the mean group size.
func (s *Store) Stats() (groups, appends uint64) {
	return s.stats.groups.Load(), s.stats.appends.Load()
}

// group is the state of one group commit while it is being staged: what the
// batch already holds, so that later appends of the same group see earlier ones.
type group struct {
	batch   *pebble.Batch
	next    uint64                        // position of the next event
	heads   map[string]uint64             // stream → last revision staged in this group
	ids     map[eventstore.EventID]staged // event IDs staged in this group
	waiting []pendingReply
}

type staged struct {
	stream string
	rev    uint64
	pos    uint64
}

type pendingReply struct {
	req  *appendReq
	resp appendResp
}

// commitLoop is the single writer. It blocks for one request, takes every
// other request already waiting (up to MaxGroup), stages them into one batch
// and fsyncs it once.
func (s *Store) commitLoop(last uint64) {
	defer close(s.done)
	defer s.own.close()
	next := last + 1
	for {
		var first *appendReq
		select {
		case first = <-s.reqs:
		case <-s.closing:
			return
		}
		g := &group{batch: s.db.NewBatch(), next: next, heads: map[string]uint64{}, ids: map[eventstore.EventID]staged{}}
		s.stage(g, first)
	drain:
		for len(g.waiting) < s.maxGrp {
			select {
			case r := <-s.reqs:
				s.stage(g, r)
			default:
				break drain
			}
		}
		next = s.commit(g)
		s.maintainRecent()
	}
}

// commit makes the group durable, then publishes the new head and replies. It
// returns the next free position.
func (s *Store) commit(g *group) uint64 {
	defer g.batch.Close()
	if !g.batch.Empty() {
		if err := g.batch.Commit(pebble.Sync); err != nil {
			err = fmt.Errorf("embedded: commit failed, store needs a restart: %w", err)
			s.broken.Store(&err)
			s.log.Error("event store commit failed", "err", err)
			for _, p := range g.waiting {
				if p.resp.err == nil {
					p.resp = appendResp{err: err}
				}
				p.req.done <- p.resp
			}
			// Positions staged in the failed batch may or may not be on disk;
			// the store refuses appends from now on, so next is never used.
			return g.next
		}
		s.stats.groups.Add(1)
		s.head.advance(g.next - 1)
	}
	for _, p := range g.waiting {
		if p.resp.err == nil {
			s.stats.appends.Add(1)
		}
		p.req.done <- p.resp
	}
	return g.next
}

// stage checks one append against the store and the group so far and, if it
// passes, adds its writes to the batch.
func (s *Store) stage(g *group, r *appendReq) {
	res, err := s.stageErr(g, r)
	g.waiting = append(g.waiting, pendingReply{req: r, resp: appendResp{res: res, err: err}})
}

func (s *Store) stageErr(g *group, r *appendReq) (eventstore.AppendResult, error) {
	if err := r.ctx.Err(); err != nil {
		return eventstore.AppendResult{}, err
	}
	if errp := s.broken.Load(); errp != nil {
		return eventstore.AppendResult{}, *errp
	}
	if res, done, err := s.retried(g, r); done || err != nil {
		return res, err
	}
	cur, exists, err := s.currentRevision(g, r.stream)
	if err != nil {
		return eventstore.AppendResult{}, fmt.Errorf("embedded: append %q: %w", r.stream, err)
	}
	if !r.expect.Satisfied(cur, exists) {
		actual := eventstore.NoStream
		if exists {
			actual = eventstore.Exact(cur)
		}
		return eventstore.AppendResult{}, &eventstore.WrongRevisionError{Stream: r.stream, Expected: r.expect, Actual: actual}
	}
	rev := cur + 1
	if !exists {
		rev = 0
	}
	now := s.clock()
	var buf []byte
	for _, e := range r.events {
		pos := g.next
		g.next++
		buf = appendRecord(buf[:0], r.stream, rev, now, e)
		// pebble copies key and value into the batch, so buf can be reused.
		_ = g.batch.Set(eventKey(pos), buf, nil)
		_ = g.batch.Set(streamKey(r.stream, rev), encodePos(pos), nil)
		ik := idKey(e.ID)
		_ = g.batch.Set(ik, encodePos(pos), nil)
		s.recent.add(ik)
		g.ids[e.ID] = staged{stream: r.stream, rev: rev, pos: pos}
		g.heads[r.stream] = rev
		rev++
	}
	hk := headKey(r.stream)
	_ = g.batch.Set(hk, encodePos(rev-1), nil)
	s.recent.add(hk)
	last := g.next - 1
	return eventstore.AppendResult{NextExpected: rev - 1, Position: eventstore.Position{Commit: last, Prepare: last}}, nil
}

// retried recognises a repeated append: when every event ID is already stored
// (or staged) as exactly these events of this stream, in order, the append is
// a no-op answered with the original result. IDs that are stored otherwise
// make the append a conflict.
func (s *Store) retried(g *group, r *appendReq) (eventstore.AppendResult, bool, error) {
	found := make([]staged, 0, len(r.events))
	for _, e := range r.events {
		st, ok, err := s.lookupID(g, e.ID)
		if err != nil {
			return eventstore.AppendResult{}, false, fmt.Errorf("embedded: append %q: %w", r.stream, err)
		}
		if ok {
			found = append(found, st)
		}
	}
	if len(found) == 0 {
		return eventstore.AppendResult{}, false, nil
	}
	for i, st := range found {
		if len(found) != len(r.events) || st.stream != r.stream || st.rev != found[0].rev+uint64(i) {
			return eventstore.AppendResult{}, false, fmt.Errorf("%w: append %q: its event ids are already stored, but not as these events of this stream",
				eventstore.ErrDuplicateEventID, r.stream)
		}
	}
	if !placesAt(r.expect, found[0].rev) {
		return eventstore.AppendResult{}, false, fmt.Errorf("%w: append %q: its events are stored from revision %d, not where expectation %v puts them",
			eventstore.ErrDuplicateEventID, r.stream, found[0].rev, r.expect)
	}
	last := found[len(found)-1]
	return eventstore.AppendResult{NextExpected: last.rev, Position: eventstore.Position{Commit: last.pos, Prepare: last.pos}}, true, nil
}

// placesAt reports whether an append with expectation expect would have put
// its first event at revision first: only then is a repeat of it a retry (the
// rule EventStoreDB applies).
func placesAt(expect eventstore.Revision, first uint64) bool {
	if n, ok := expect.Exact(); ok {
		return n+1 == first
	}
	switch {
	case expect.IsNoStream():
		return first == 0
	case expect.IsStreamExists():
		return first > 0
	}
	return true // Any
}

func (s *Store) lookupID(g *group, id eventstore.EventID) (staged, bool, error) {
	if st, ok := g.ids[id]; ok {
		return st, true, nil
	}
	v, err := s.getIndexed(idKey(id), &s.own)
	if isNotFound(err) {
		return staged{}, false, nil
	}
	if err != nil {
		return staged{}, false, err
	}
	pos := binary.BigEndian.Uint64(v)
	rec, closer, err := s.db.Get(eventKey(pos))
	if err != nil {
		return staged{}, false, fmt.Errorf("event %s indexed at %d: %w", id, pos, err)
	}
	defer closer.Close()
	stream, rev, err := recordHeader(rec)
	if err != nil {
		return staged{}, false, err
	}
	return staged{stream: stream, rev: rev, pos: pos}, true, nil
}

func (s *Store) currentRevision(g *group, stream string) (uint64, bool, error) {
	if rev, ok := g.heads[stream]; ok {
		return rev, true, nil
	}
	return s.streamHead(stream, &s.own)
}
