// Package embedded is the default event store backend: a single-node log kept
// in pebble, needing no server.
//
// All appends go through one committer goroutine, which takes every append
// waiting at that moment, checks their expectations in order and writes
// them in one batch to the store's commit log, fsynced once (group commit);
// the batch also goes into pebble, which keeps no WAL of its own
// (commitlog.go). A multi-stream append is one request there: all its parts
// pass their checks and are staged, or none is. Append returns only after
// that fsync, so an acknowledged event survives a crash. Positions form a
// dense sequence 1, 2, 3, ... (Commit == Prepare).
package embedded

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"

	"tvsm/eventstore"
)

// formatVersion is stored under metaKey("format"); Open refuses other values
// except the upgradable ones. Version 2 added the per-stream head keys;
// version 3 writes them only for streams past revision 0 (see keys.go);
// version 4 keeps recent writes in the commit log instead of pebble's WAL.
// Open upgrades a version-2 or -3 store by rewriting the marker once pebble
// has replayed its WAL (a version-2 store is a valid version-3 store with
// redundant head keys); an older build then refuses it, as it must: it
// would not replay the commit log.
const formatVersion = 4

var upgradableFormats = []uint64{2, 3}

// commitLogDir is the commit log's directory inside the store's.
const commitLogDir = "commitlog"

// syncQueue bounds the groups written and waiting for their fsync; a full
// queue makes the committer wait.
const syncQueue = 16

// memtableSize is pebble's memtable size; memtableReserve is what its
// memtables can hold of the block cache at once (see Open).
const (
	memtableSize    = 64 << 20
	memtableReserve = 4 * memtableSize
)

// Options tune the store. The zero value is ready to use.
type Options struct {
	Logger *slog.Logger
	// Clock gives the Created time of events (default time.Now).
	Clock func() time.Time
	// MaxGroup bounds how many appends share one fsync (default 4096).
	MaxGroup int
	// CacheSize is pebble's block cache in bytes (default 64 MiB).
	CacheSize int64
	// CommitDelay bounds how long a group of appends waits for the next of
	// the others expected to join it (see commitHold). Zero means the time
	// of one fsync, as measured; negative means no wait at all.
	CommitDelay time.Duration

	filterGenKeys int           // tests: keys per recent-key filter (recent.go)
	firstSegment  int64         // tests: the commit log's first segment size (commitlog.go)
	fsyncer       fsyncer       // tests: makes the fsyncs
	fsyncTime     time.Duration // tests: the fsync time commitHold goes by instead of the measured one
}

// Store is the embedded backend. It implements eventstore.Store,
// eventstore.MultiAppender and eventstore.HeadReader. Safe for concurrent
// use.
type Store struct {
	db     *pebble.DB
	log    *slog.Logger
	clock  func() time.Time
	maxGrp int
	// reqs queues requests for the committer, up to a group's worth, so
	// that an appender hands its request over without waiting for the
	// committer to finish staging the one before.
	reqs    chan *appendReq
	closing chan struct{}
	done    chan struct{} // closed when the committer has exited
	once    sync.Once
	head    headNotifier
	tail    tail // the newest durable events, for live subscriptions
	// tailArena holds the payloads of tail events; only the committer uses it.
	tailArena arena
	// broken holds the error that made the store refuse further appends (a
	// failed fsync leaves the on-disk state unknown; see fsyncgate).
	broken atomic.Pointer[error]
	stats  storeStats
	hold   commitHold // the committer's
	// inFlight counts the appends sent to the committer and not yet
	// answered.
	inFlight atomic.Int64
	wal      *walSyncs
	// commitLog is the committer's (syncLoop fsyncs the segments it is
	// given); toApply passes each group to the applier, toSync to syncLoop.
	commitLog *commitLog
	// replayHead is the last event position in pebble or replayed from
	// the commit log while the store opens (replay).
	replayHead uint64
	toApply    chan *group
	toSync     chan *group
	// unsynced counts the groups written and not yet through their fsync;
	// syncLoop signals settled when a group's fsync has ended.
	unsynced atomic.Int64
	settled  chan struct{}
	// logFlush is the pebble flush that lets the commit log recycle its
	// first logFlushN sealed segments (the committer's).
	logFlush  <-chan struct{}
	logFlushN int
	// assumedFsync, when not zero, replaces the measured fsync time.
	assumedFsync time.Duration
	recent       *recentKeys
	own          durableIter // the committer's
	// lsmGen counts changes of pebble's sstables (flushes, compactions) and
	// filter drops: the committer renews its iterator when it moves.
	lsmGen *atomic.Uint64
	fsyncs *atomic.Uint64 // every fsync of pebble's files and of the commit log
}

// Open opens (creating if needed) the store in dir.
func Open(dir string, opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.MaxGroup <= 0 {
		opts.MaxGroup = 4096
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = 64 << 20
	}
	// Pebble charges its memtables to the block cache: every memtable, the
	// one written, those queued for flushing (at most
	// MemTableStopWritesThreshold, 2) and the one kept for reuse, reserves
	// its size there. A cache of CacheSize alone was all reserved under
	// write load and cached no block at all (0 hits in 100,000 lookups),
	// so every id and head lookup that reached the sstables read,
	// checksummed and decompressed a block again.
	cache := pebble.NewCache(opts.CacheSize + memtableReserve)
	defer cache.Unref()
	lsmGen := new(atomic.Uint64)
	fsyncs, wal := new(atomic.Uint64), new(walSyncs)
	popts := &pebble.Options{
		FS:                 syncFS{FS: vfs.Default, fsyncs: fsyncs, via: opts.fsyncer},
		DisableWAL:         true, // the commit log is the store's WAL
		Cache:              cache,
		FormatMajorVersion: pebble.FormatNewest,
		MemTableSize:       memtableSize,
		Logger:             pebbleLogger{opts.Logger.With("component", "pebble")},
		EventListener: &pebble.EventListener{
			FlushEnd:      func(pebble.FlushInfo) { lsmGen.Add(1) },
			CompactionEnd: func(pebble.CompactionInfo) { lsmGen.Add(1) },
		},
	}
	// The log is read mostly by long sequential scans (replay, catch-up), for
	// which 32 KiB blocks cost far less per event than the default 4 KiB:
	// measured replay went from about 0.9 to over 1.3 million events/s.
	// Appends look up event ids that almost never exist (dedup) and streams
	// (most new): bloom filters answer most of those without reading a block.
	for i := range popts.Levels {
		popts.Levels[i].BlockSize = 32 << 10
		popts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	db, err := pebble.Open(dir, popts)
	if err != nil {
		return nil, fmt.Errorf("embedded: open %s: %w", dir, err)
	}
	s := &Store{
		db:           db,
		log:          opts.Logger,
		clock:        opts.Clock,
		maxGrp:       opts.MaxGroup,
		reqs:         make(chan *appendReq, opts.MaxGroup),
		closing:      make(chan struct{}),
		done:         make(chan struct{}),
		lsmGen:       lsmGen,
		hold:         commitHold{limit: opts.CommitDelay},
		wal:          wal,
		toApply:      make(chan *group),
		toSync:       make(chan *group, syncQueue),
		settled:      make(chan struct{}, 1),
		assumedFsync: opts.fsyncTime,
		fsyncs:       fsyncs,
	}
	sync := syncData
	if opts.fsyncer != nil {
		sync = func(f *os.File) error { return opts.fsyncer.SyncData(f.Fd()) }
	}
	if s.replayHead, err = lastEventPos(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("embedded: open %s: %w", dir, err)
	}
	clog, found, err := openCommitLog(filepath.Join(dir, commitLogDir), wal, func(f *os.File) error {
		fsyncs.Add(1)
		return sync(f)
	}, s.replay)
	var last uint64
	if err == nil {
		last, err = s.init()
	}
	if err == nil {
		// What pebble replayed from a WAL of an older format and what the
		// commit log replayed go to sstables: pebble keeps no WAL, and the
		// committer's filters must know every key in a memtable (recent.go).
		err = db.Flush()
	}
	if err == nil {
		if opts.firstSegment > 0 {
			clog.first = opts.firstSegment
		}
		err = clog.start(found)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("embedded: open %s: %w", dir, err)
	}
	s.commitLog = clog
	s.recent = newRecentKeys(opts.filterGenKeys)
	s.head.init(last)
	go s.applier()
	go s.commitLoop(last)
	return s, nil
}

// replay puts one record of the commit log, a batch, back into pebble.
// Records written and flushed before are put again: a batch only sets keys,
// in the order written, so the newest value of each wins.
func (s *Store) replay(payload []byte) error {
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.SetRepr(slices.Clone(payload)); err != nil {
		return err
	}
	first, last, err := eventRange(b)
	if err != nil {
		return err
	}
	// Positions are dense: a record that starts past the next one follows
	// a lost record. Its group was never acknowledged (groups are
	// acknowledged in order, after their fsync), and what follows it must
	// not be served either: the log stays a prefix of what was written.
	if last != 0 && first > s.replayHead+1 {
		return fmt.Errorf("%w: a record with positions %d to %d follows position %d", errLogHole, first, last, s.replayHead)
	}
	if err := s.db.Apply(b, pebble.NoSync); err != nil {
		return err
	}
	s.replayHead = max(s.replayHead, last)
	return nil
}

// errLogHole ends the replay of the commit log at a lost record.
var errLogHole = errors.New("commit log: a record is missing")

// eventRange returns the lowest and highest event positions b writes; 0
// and 0 when it writes no event.
func eventRange(b *pebble.Batch) (first, last uint64, err error) {
	r := b.Reader()
	for {
		_, key, _, ok, err := r.Next()
		if err != nil || !ok {
			return first, last, err
		}
		if len(key) == 9 && key[0] == kindEvent {
			pos := eventKeyPos(key)
			if first == 0 || pos < first {
				first = pos
			}
			last = max(last, pos)
		}
	}
}

// init checks the format marker (writing it on a new store) and returns the
// position of the last stored event.
func (s *Store) init() (uint64, error) {
	v, closer, err := s.db.Get(metaKey("format"))
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		// Durable with the flush that follows in Open.
		if err := s.db.Set(metaKey("format"), encodePos(formatVersion), pebble.NoSync); err != nil {
			return 0, err
		}
	case err != nil:
		return 0, err
	default:
		got := binary.BigEndian.Uint64(v)
		closer.Close()
		switch {
		case got == formatVersion:
		case slices.Contains(upgradableFormats, got):
			if err := s.db.Set(metaKey("format"), encodePos(formatVersion), pebble.NoSync); err != nil {
				return 0, err
			}
			s.log.Info("event store: data format upgraded", "from", got, "to", formatVersion)
		default:
			return 0, fmt.Errorf("data format %d, this build reads %d and upgrades %v", got, formatVersion, upgradableFormats)
		}
	}
	return lastEventPos(s.db)
}

// lastEventPos returns the position of the last event in db, 0 for none.
func lastEventPos(db *pebble.DB) (uint64, error) {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{kindEvent}, UpperBound: []byte{kindEvent + 1}})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	if !it.Last() {
		return 0, it.Error()
	}
	return eventKeyPos(it.Key()), nil
}

// Close stops accepting appends, ends subscriptions and closes the database.
// Appends in flight either complete or fail with ErrClosed.
func (s *Store) Close() error {
	var err error
	s.once.Do(func() {
		close(s.closing)
		<-s.done
		// A store closed cleanly has everything in sstables: the next Open
		// replays nothing, and tools that open pebble alone see it all. A
		// broken one (a failed fsync) writes nothing more.
		flushed := false
		if s.broken.Load() == nil {
			err = s.db.Flush()
			flushed = err == nil
		}
		err = errors.Join(err, s.commitLog.close(flushed), s.db.Close())
	})
	return err
}

// SequentialPositions implements eventstore.SequentialPositions.
func (s *Store) SequentialPositions() {}

// Head returns the position of the last durable event (Beginning when empty).
func (s *Store) Head(context.Context) (eventstore.Position, error) {
	p := s.head.load()
	return eventstore.Position{Commit: p, Prepare: p}, nil
}

// Append implements eventstore.Store. It is a multi-stream append of one
// part.
func (s *Store) Append(ctx context.Context, stream string, expect eventstore.Revision, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	if err := eventstore.ValidateAppend(stream, events); err != nil {
		return eventstore.AppendResult{}, err
	}
	req := &appendReq{ctx: ctx}
	req.one[0] = eventstore.StreamAppend{Stream: stream, Expect: expect, Events: events}
	req.parts, req.results = req.one[:], req.oneResult[:]
	if err := s.send(ctx, req); err != nil {
		return eventstore.AppendResult{}, err
	}
	return req.results[0], nil
}

// AppendMulti implements eventstore.MultiAppender: the parts are checked
// and staged together by the committer, so they share one fsync and land
// all or none.
func (s *Store) AppendMulti(ctx context.Context, parts ...eventstore.StreamAppend) ([]eventstore.AppendResult, error) {
	if err := eventstore.ValidateAppendMulti(parts); err != nil {
		return nil, err
	}
	req := &appendReq{ctx: ctx, parts: parts, results: make([]eventstore.AppendResult, len(parts))}
	if err := s.send(ctx, req); err != nil {
		return nil, err
	}
	return req.results, nil
}

// send hands req to the committer and waits for its answer.
func (s *Store) send(ctx context.Context, req *appendReq) error {
	if errp := s.broken.Load(); errp != nil {
		return *errp
	}
	req.done = make(chan error, 1)
	// Counted before it is sent, so that the committer sees every appender
	// waiting for it (commitHold); the committer takes it off when it answers.
	s.inFlight.Add(1)
	select {
	case s.reqs <- req:
	case <-s.closing:
		s.inFlight.Add(-1)
		return eventstore.ErrClosed
	case <-ctx.Done():
		s.inFlight.Add(-1)
		return ctx.Err()
	}
	// Once the request is queued the outcome is decided by the committer
	// (which skips a request whose context has ended); a caller that stops
	// waiting gets ctx.Err() and an unknown outcome, which a retry with the
	// same event IDs resolves.
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		// The committer answers every request it took before it exits;
		// one left in the queue was never taken.
		select {
		case err := <-req.done:
			return err
		default:
			return eventstore.ErrClosed
		}
	}
}

// ReadStream implements eventstore.Store.
func (s *Store) ReadStream(ctx context.Context, stream string, from eventstore.Revision, max int) ([]eventstore.RecordedEvent, error) {
	start, err := eventstore.ValidateRead(stream, from)
	if err != nil {
		return nil, err
	}
	select {
	case <-s.closing:
		return nil, eventstore.ErrClosed
	default:
	}
	head := s.head.load()
	// Loading an aggregate that does not exist yet (every create does) is
	// answered by one bloom-filtered point lookup, without an iterator.
	first, exists, err := s.streamFirst(stream, nil)
	if err != nil {
		return nil, fmt.Errorf("embedded: read %q: %w", stream, err)
	}
	if !exists || first > head { // a stream whose first event is not durable does not exist yet
		return nil, fmt.Errorf("embedded: read %q: %w", stream, eventstore.ErrStreamNotFound)
	}
	if start > 0 {
		// Reading past the end (checking a cached aggregate for news) costs a
		// second point lookup instead of an iterator. The stream exists, so
		// without a head key it ends at revision 0.
		last, _, err := s.indexedPos(headKey(stream), nil)
		if err != nil {
			return nil, fmt.Errorf("embedded: read %q: %w", stream, err)
		}
		if start > last {
			return nil, nil
		}
	}
	it, err := s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: streamKey(stream, start), UpperBound: streamUpperBound(stream)})
	if err != nil {
		return nil, fmt.Errorf("embedded: read %q: %w", stream, err)
	}
	defer it.Close()
	dec := newDecoder()
	var out []eventstore.RecordedEvent
	for ok := it.First(); ok && (max <= 0 || len(out) < max); ok = it.Next() {
		pos := binary.BigEndian.Uint64(it.Value())
		if pos > head {
			break // committed by pebble but not yet acknowledged as durable
		}
		e, err := s.eventAt(dec, pos)
		if err != nil {
			return nil, fmt.Errorf("embedded: read %q: %w", stream, err)
		}
		out = append(out, e)
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("embedded: read %q: %w", stream, err)
	}
	return out, nil
}

func (s *Store) eventAt(dec *decoder, pos uint64) (eventstore.RecordedEvent, error) {
	v, closer, err := s.db.Get(eventKey(pos))
	if err != nil {
		return eventstore.RecordedEvent{}, fmt.Errorf("event at position %d: %w", pos, err)
	}
	defer closer.Close()
	return dec.decode(pos, v)
}

// streamFirst returns the position of stream's first event, and so whether
// the stream exists; own as for getIndexed.
func (s *Store) streamFirst(stream string, own *durableIter) (pos uint64, exists bool, err error) {
	return s.indexedPos(streamKey(stream, 0), own)
}

// streamHead returns the revision of the last stored event of stream; own
// as for getIndexed. A stream without a head key ends at revision 0.
func (s *Store) streamHead(stream string, own *durableIter) (rev uint64, exists bool, err error) {
	if rev, exists, err = s.indexedPos(headKey(stream), own); exists || err != nil {
		return rev, exists, err
	}
	_, exists, err = s.streamFirst(stream, own)
	return 0, exists, err
}

// indexedPos reads the position or revision stored under an index key.
func (s *Store) indexedPos(key []byte, own *durableIter) (v uint64, found bool, err error) {
	b, err := s.getIndexed(key, own)
	if isNotFound(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return binary.BigEndian.Uint64(b), true, nil
}

// pebbleLogger routes pebble's messages to slog; pebble's Fatalf means the
// database cannot continue, which we report and then panic as pebble expects.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) { p.l.Debug(fmt.Sprintf(format, args...)) }
func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...))
}
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg, "fatal", true)
	panic(msg)
}

// headNotifier holds the last durable position and wakes subscribers when it
// moves. Waiters take the channel before re-reading the log, so an advance
// between their read and their wait is never missed.
type headNotifier struct {
	mu   sync.Mutex
	pos  atomic.Uint64
	wake chan struct{}
}

func (h *headNotifier) init(pos uint64) {
	h.pos.Store(pos)
	h.wake = make(chan struct{})
}

func (h *headNotifier) load() uint64 { return h.pos.Load() }

// watch returns the current head and a channel closed on the next advance.
func (h *headNotifier) watch() (uint64, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pos.Load(), h.wake
}

func (h *headNotifier) advance(pos uint64) {
	h.mu.Lock()
	h.pos.Store(pos)
	close(h.wake)
	h.wake = make(chan struct{})
	h.mu.Unlock()
}
