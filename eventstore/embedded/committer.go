package embedded

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"tvsm/eventstore"
)

// appendReq is one Append or AppendMulti: the committer checks its parts
// together and stages all of them or none.
type appendReq struct {
	ctx   interface{ Err() error }
	parts []eventstore.StreamAppend
	// results has one entry per part; the committer fills it in before it
	// answers on done, and the caller reads it only after that answer.
	results []eventstore.AppendResult
	done    chan error
	// one and oneResult hold the part and result of a single-stream Append,
	// which thus costs no allocations of its own.
	one       [1]eventstore.StreamAppend
	oneResult [1]eventstore.AppendResult
}

// storeStats are counters for metrics and benchmarks.
type storeStats struct {
	groups  atomic.Uint64 // durable batches
	appends atomic.Uint64 // acknowledged appends, idempotent no-ops included; an AppendMulti counts once
}

// Stats reports how many group commits and appends the store has done since
// Open; appends/groups is the mean group size.
func (s *Store) Stats() (groups, appends uint64) {
	return s.stats.groups.Load(), s.stats.appends.Load()
}

// Fsyncs reports how many fsyncs the store has made since Open: of its
// commit log and of pebble's files.
func (s *Store) Fsyncs() uint64 { return s.fsyncs.Load() }

// group is the state of one group commit while it is being staged: what the
// batch already holds, so that later appends of the same group see earlier ones.
type group struct {
	batch   *pebble.Batch
	next    uint64                        // position of the next event
	heads   map[string]uint64             // stream → last revision staged in this group
	ids     map[eventstore.EventID]staged // event IDs staged in this group
	waiting []pendingReply
	buf     []byte                     // record encoding buffer (the committer's, reused: pebble copies what it is given)
	tail    []eventstore.RecordedEvent // the staged events, for the tail once durable
	index   *indexWrites               // the staged index keys, for the batch at apply (the committer's, reused)
	err     error                      // why the batch could not be made durable
	// seg is the commit log segment its record went to, nil if none did;
	// applied is closed once the applier has put the batch into pebble,
	// with the outcome in applyErr.
	seg      *segment
	end      int64 // the offset in seg where its record ends
	applied  chan struct{}
	applyErr error
}

type staged struct {
	stream string
	rev    uint64
	pos    uint64
}

type pendingReply struct {
	req *appendReq
	err error
}

// commitLoop is the single writer. It blocks for one request, stages it and
// every other request that arrives while commitHold keeps the group open (up
// to MaxGroup) into one batch, writes the batch to the commit log, hands it
// to the applier (pebble's memtable) and the group to syncLoop (the fsync
// and the replies), and goes on with the next group once the batch is in
// pebble: the staging of one group overlaps the fsync of the one before.
//
// A group applied to pebble is visible to the committer's own checks at
// once, so the next group is checked against it; readers see it only when
// syncLoop has advanced the head past it.
func (s *Store) commitLoop(last uint64) {
	defer close(s.done)
	synced := make(chan struct{})
	go s.syncLoop(synced)
	defer func() { <-synced }()
	defer close(s.toSync)
	defer close(s.toApply)
	defer s.own.close()
	next := last + 1
	// What only staging uses is reused from group to group; what syncLoop
	// uses (replies, tail events) is sized like the group before.
	index := new(indexWrites)
	heads, ids := map[string]uint64{}, map[eventstore.EventID]staged{}
	var lastReplies, lastEvents int
	var buf []byte
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var first *appendReq
		select {
		case first = <-s.reqs:
		case <-s.closing:
			return
		}
		if len(ids) > 1024 { // clear costs what the map once held
			heads, ids = map[string]uint64{}, map[eventstore.EventID]staged{}
		}
		clear(heads)
		clear(ids)
		g := &group{batch: s.db.NewBatch(), next: next, heads: heads, ids: ids, index: index, buf: buf[:0],
			waiting: make([]pendingReply, 0, lastReplies), tail: make([]eventstore.RecordedEvent, 0, lastEvents)}
		s.take(g, first)
		s.gather(g, timer)
		lastReplies, lastEvents, buf = len(g.waiting), len(g.tail), g.buf
		next = s.commit(g)
		s.maintainRecent()
		s.maintainLog()
	}
}

// gather takes requests into g for as long as commitHold keeps it open.
// Requests already waiting join it even when it has all it expected, but
// not once its hold has run out.
func (s *Store) gather(g *group, timer *time.Timer) {
	last := time.Now() // when the group opened, took a request or saw an fsync end
	for len(g.waiting) < s.maxGrp {
		syncing := s.unsynced.Load() > 0
		hold, deadline := s.hold.hold(len(g.waiting), syncing, last, s.fsyncTime())
		now := time.Now()
		if hold && !deadline.IsZero() && !now.Before(deadline) {
			s.hold.ranOut(len(g.waiting))
			return
		}
		select {
		case r := <-s.reqs:
			s.take(g, r)
			last = now
			continue
		default:
		}
		if !hold {
			return
		}
		var ranOut <-chan time.Time
		if !deadline.IsZero() {
			timer.Reset(deadline.Sub(now))
			ranOut = timer.C
		}
		select {
		case r := <-s.reqs:
			s.take(g, r)
			last = time.Now()
		case <-s.settled:
			last = time.Now()
		case <-ranOut:
			s.hold.ranOut(len(g.waiting))
			return
		case <-s.closing:
			return
		}
		timer.Stop()
	}
}

// fsyncTime is how long an fsync of the commit log takes.
func (s *Store) fsyncTime() time.Duration {
	if s.assumedFsync != 0 {
		return s.assumedFsync
	}
	return s.wal.duration()
}

// take stages r into g.
func (s *Store) take(g *group, r *appendReq) {
	s.hold.arrived(int(s.inFlight.Load()))
	s.stage(g, r)
}

// commit writes g's batch to the commit log and hands it to the applier
// and g to syncLoop, then waits for the batch to be in pebble. It returns
// the next free position.
//
// The order matters on this 2-core VM. A goroutine woken by one that goes
// on running waits until that one blocks, or until an idle processor has
// woken up (tens of µs here) and taken it. syncLoop, woken last, runs its
// fsync as soon as the committer blocks for the applier; the applier,
// woken first and meanwhile waiting its turn, inserts the batch into the
// memtable beside that fsync, which outlasts it.
func (s *Store) commit(g *group) uint64 {
	g.index.writeTo(g.batch)
	if !g.batch.Empty() {
		s.commitLog.stage(g.batch.Repr()) // copies the batch before pebble changes its header
		g.applied = make(chan struct{})
		s.toApply <- g
		seg, err := s.commitLog.write()
		if err != nil {
			// Broken at once, so that the committer stages nothing more
			// behind a record that is not in the log.
			g.err = s.markBroken(err)
		} else {
			g.seg, g.end = seg, seg.off
		}
	}
	s.unsynced.Add(1)
	s.toSync <- g
	if g.applied != nil {
		<-g.applied
		if g.applyErr != nil {
			s.markBroken(g.applyErr)
		}
	}
	// Positions staged in a failed batch may or may not be on disk; the
	// store refuses appends from then on, so they are never used again.
	return g.next
}

// applier inserts each group's batch into pebble's memtable. Pebble has no
// WAL of its own (the commit log is the store's), so the batch goes in
// without a sync.
func (s *Store) applier() {
	for g := range s.toApply {
		g.applyErr = s.db.Apply(g.batch, pebble.NoSync)
		close(g.applied)
	}
}

// syncLoop fsyncs each group's record in the order the groups were
// written, then publishes the new head and replies. Every reply therefore
// comes after the fsync of its own group and of all groups before it, even
// for a request answered without writing (a retry of events staged in an
// earlier group).
func (s *Store) syncLoop(done chan<- struct{}) {
	defer close(done)
	for g := range s.toSync {
		s.settle(g)
	}
}

func (s *Store) settle(g *group) {
	defer g.batch.Close()
	if g.seg != nil {
		if g.err = s.commitLog.sync(g.seg); g.err == nil {
			g.seg.durable.Store(g.end)
		}
	}
	if g.applied != nil {
		<-g.applied
		if g.err == nil {
			g.err = g.applyErr
		}
	}
	// Taken off before the replies, so that an appender that comes back at
	// once is not counted twice.
	s.inFlight.Add(-int64(len(g.waiting)))
	s.unsynced.Add(-1)
	select {
	case s.settled <- struct{}{}:
	default:
	}
	if g.err == nil {
		if errp := s.broken.Load(); errp != nil {
			g.err = *errp // an earlier group failed: this one is not acknowledged
		}
	}
	if g.err != nil {
		s.fail(g)
		return
	}
	if g.seg != nil {
		s.stats.groups.Add(1)
		s.tail.add(g.tail)
		s.head.advance(g.next - 1)
	}
	for _, p := range g.waiting {
		if p.err == nil {
			s.stats.appends.Add(1)
		}
		p.req.done <- p.err
	}
}

// maintainLog has pebble flush what the commit log's full segments hold,
// and recycles those segments once it has and their groups are fsynced.
func (s *Store) maintainLog() {
	if s.logFlush != nil {
		select {
		case <-s.logFlush:
			s.logFlushN -= s.commitLog.flushed(s.logFlushN)
			if s.logFlushN == 0 {
				s.logFlush = nil
			}
		default:
		}
	}
	if err := s.commitLog.takeErr(); err != nil {
		s.log.Warn("event store: commit log upkeep failed (appends go on, their fsyncs may be slower)", "err", err)
	}
	if s.logFlush != nil || s.commitLog.sealedCount() == 0 {
		return
	}
	flushed, err := s.db.AsyncFlush()
	if err != nil {
		s.log.Warn("event store: flush to recycle the commit log failed", "err", err)
		return
	}
	s.logFlush, s.logFlushN = flushed, s.commitLog.sealedCount()
}

// markBroken makes the store refuse appends from now on because of cause
// and returns the error it answers with.
func (s *Store) markBroken(cause error) error {
	err := fmt.Errorf("embedded: commit failed, store needs a restart: %w", cause)
	if s.broken.CompareAndSwap(nil, &err) {
		s.log.Error("event store commit failed", "err", err)
		return err
	}
	return *s.broken.Load()
}

// fail marks the store broken by g's error (a failed fsync leaves the
// on-disk state unknown; see fsyncgate) and answers every request of g with
// its own error or that one.
func (s *Store) fail(g *group) {
	err := g.err
	if s.broken.Load() == nil {
		err = s.markBroken(err)
	}
	for _, p := range g.waiting {
		if p.err == nil {
			p.err = err
		}
		p.req.done <- p.err
	}
}

// stage checks one request against the store and the group so far and, if
// it passes, adds its writes to the batch.
func (s *Store) stage(g *group, r *appendReq) {
	g.waiting = append(g.waiting, pendingReply{req: r, err: s.stageErr(g, r)})
}

// stageErr checks every part of r before it stages any, so that a request
// that fails leaves nothing in the batch.
func (s *Store) stageErr(g *group, r *appendReq) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	if errp := s.broken.Load(); errp != nil {
		return *errp
	}
	if done, err := s.retried(g, r); done || err != nil {
		return err
	}
	var few [4]uint64 // most requests have one or two parts: no allocation
	firsts := few[:0]
	for _, p := range r.parts {
		first, err := s.firstRevision(g, p)
		if err != nil {
			return err
		}
		firsts = append(firsts, first)
	}
	now := s.clock()
	for i, p := range r.parts {
		r.results[i] = s.stagePart(g, p, firsts[i], now)
	}
	return nil
}

// firstRevision checks p's expectation against the store and the group so
// far and returns the revision p's first event gets.
func (s *Store) firstRevision(g *group, p eventstore.StreamAppend) (uint64, error) {
	cur, exists, err := s.currentRevision(g, p.Stream, p.Expect.IsNoStream())
	if err != nil {
		return 0, fmt.Errorf("embedded: append %q: %w", p.Stream, err)
	}
	if !p.Expect.Satisfied(cur, exists) {
		actual := eventstore.NoStream
		if exists {
			actual = eventstore.Exact(cur)
		}
		return 0, &eventstore.WrongRevisionError{Stream: p.Stream, Expected: p.Expect, Actual: actual}
	}
	if !exists {
		return 0, nil
	}
	return cur + 1, nil
}

// stagePart adds p's events to the batch at the next positions, the first
// at revision rev of its stream.
func (s *Store) stagePart(g *group, p eventstore.StreamAppend, rev uint64, now time.Time) eventstore.AppendResult {
	created := time.Unix(0, now.UnixNano()).UTC() // as a decoded record has it
	for _, e := range p.Events {
		pos := g.next
		g.next++
		g.buf = appendRecord(g.buf[:0], p.Stream, rev, now, e)
		g.tail = append(g.tail, s.tailEvent(p.Stream, rev, pos, created, e))
		var ek [9]byte
		_ = g.batch.Set(appendEventKey(ek[:0], pos), g.buf, nil)
		if k := g.index.set(appendStreamKey(g.index.key(), p.Stream, rev), pos); rev == 0 {
			s.recent.add(k) // looked up by streamFirst
		}
		s.recent.add(g.index.set(appendIDKey(g.index.key(), e.ID), pos))
		g.ids[e.ID] = staged{stream: p.Stream, rev: rev, pos: pos}
		g.heads[p.Stream] = rev
		rev++
	}
	if rev > 1 { // a stream that ends at revision 0 needs no head key (keys.go)
		s.recent.add(g.index.set(appendHeadKey(g.index.key(), p.Stream), rev-1))
	}
	last := g.next - 1
	return eventstore.AppendResult{NextExpected: rev - 1, Position: eventstore.Position{Commit: last, Prepare: last}}
}

// retried recognises a repeated request: when every part is a repeat of
// stored (or staged) events (see retriedPart), the request is a no-op
// answered with the original results. When only some parts are, it is a
// conflict, as is a single part whose IDs are stored otherwise.
func (s *Store) retried(g *group, r *appendReq) (bool, error) {
	repeats := 0
	for i, p := range r.parts {
		res, repeat, err := s.retriedPart(g, p)
		if err != nil {
			return false, err
		}
		if repeat {
			r.results[i] = res
			repeats++
		}
	}
	switch repeats {
	case 0:
		return false, nil
	case len(r.parts):
		return true, nil
	}
	return false, fmt.Errorf("%w: %d of the %d parts of a multi-stream append are already stored, the others not",
		eventstore.ErrDuplicateEventID, repeats, len(r.parts))
}

// retriedPart reports whether every event ID of p is already stored (or
// staged) as exactly these events of this stream, in order, where p's
// expectation puts them, and answers with where they are. IDs that are
// stored otherwise make the part a conflict.
func (s *Store) retriedPart(g *group, p eventstore.StreamAppend) (eventstore.AppendResult, bool, error) {
	found := make([]staged, 0, len(p.Events))
	for _, e := range p.Events {
		st, ok, err := s.lookupID(g, e.ID)
		if err != nil {
			return eventstore.AppendResult{}, false, fmt.Errorf("embedded: append %q: %w", p.Stream, err)
		}
		if ok {
			found = append(found, st)
		}
	}
	if len(found) == 0 {
		return eventstore.AppendResult{}, false, nil
	}
	for i, st := range found {
		if len(found) != len(p.Events) || st.stream != p.Stream || st.rev != found[0].rev+uint64(i) {
			return eventstore.AppendResult{}, false, fmt.Errorf("%w: append %q: its event ids are already stored, but not as these events of this stream",
				eventstore.ErrDuplicateEventID, p.Stream)
		}
	}
	if !p.Expect.Places(found[0].rev) {
		return eventstore.AppendResult{}, false, fmt.Errorf("%w: append %q: its events are stored from revision %d, not where expectation %v puts them",
			eventstore.ErrDuplicateEventID, p.Stream, found[0].rev, p.Expect)
	}
	last := found[len(found)-1]
	return eventstore.AppendResult{NextExpected: last.rev, Position: eventstore.Position{Commit: last.pos, Prepare: last.pos}}, true, nil
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

// currentRevision returns the last revision of stream, staged in g or
// stored. When the append expects a new stream (every create does), one
// lookup of its first index key is all it takes to find it absent.
func (s *Store) currentRevision(g *group, stream string, expectNew bool) (uint64, bool, error) {
	if rev, ok := g.heads[stream]; ok {
		return rev, true, nil
	}
	if expectNew {
		if _, exists, err := s.streamFirst(stream, &s.own); err != nil || !exists {
			return 0, false, err
		}
	}
	return s.streamHead(stream, &s.own)
}

// tailEvent is event e as a subscriber reads it back from the log, with its
// payload copied: the caller's buffers are not the store's to keep.
func (s *Store) tailEvent(stream string, rev, pos uint64, created time.Time, e eventstore.EventData) eventstore.RecordedEvent {
	r := eventstore.RecordedEvent{
		ID: e.ID, Stream: stream, Revision: rev, Type: e.Type, Created: created,
		Position: eventstore.Position{Commit: pos, Prepare: pos},
	}
	payload := s.tailArena.alloc(len(e.Data) + len(e.Metadata))
	copy(payload, e.Data)
	copy(payload[len(e.Data):], e.Metadata)
	if len(e.Data) > 0 {
		r.Data = payload[:len(e.Data):len(e.Data)]
	}
	if len(e.Metadata) > 0 {
		r.Metadata = payload[len(e.Data):]
	}
	return r
}
