package esdbdouble

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"tvsm/internal/platform/fsutil"
)

// logFile is the name of the log in the data directory.
const logFile = "events.log"

// eventLog is the double's durable log: every event in memory, in log
// order, indexed by stream, and the file they were appended to.
//
// Appends are checked and written to the file under mu, in the order they
// are decided; then the appender waits for an fsync that covers its write
// (waitDurable). Whoever fsyncs covers every write made before, so
// concurrent appenders share fsyncs. Readers and subscriptions see only the
// durable prefix of the log: an event is never shown before it is on disk.
type eventLog struct {
	mu      sync.Mutex
	file    *os.File
	size    uint64           // bytes written to the file
	events  []*event         // in log order: written ones, the durable prefix first
	streams map[string][]int // stream -> indexes in events, by revision (tombstones left out)
	recent  *idCache         // event ids of recent appends, for expected revision Any
	durable int              // events[:durable] are on disk
	wake    chan struct{}    // closed and replaced when durable moves
	failed  error            // a write or fsync failed: the log accepts nothing more

	// tombstones: stream -> index in events of its tombstone (see
	// delete.go). A soft delete is an event of the stream's metadata
	// stream, indexed as any other.
	tombstones map[string]int

	syncMu    sync.Mutex    // one fsync at a time
	syncDelay time.Duration // tests: the least an append's fsync takes (Options.SyncDelay)
}

// openLog opens (creating it if needed) the log in dir and replays it. A
// record cut short at the end of the file, an append that a crash
// interrupted before it was acknowledged, is cut off; a damaged record
// anywhere else fails the open.
func openLog(dir string, recentIDs int) (*eventLog, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, logFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, err
	}
	l := &eventLog{
		file: f, streams: map[string][]int{}, tombstones: map[string]int{},
		recent: newIDCache(recentIDs), wake: make(chan struct{}),
	}
	if err := l.replay(path); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

func (l *eventLog) replay(path string) error {
	b, err := io.ReadAll(l.file)
	if err != nil {
		return err
	}
	if len(b) < len(fileHeader) {
		// New, or created by a crash before its header was synced.
		if err := l.file.Truncate(0); err != nil {
			return err
		}
		if _, err := l.file.WriteAt([]byte(fileHeader), 0); err != nil {
			return err
		}
		if err := l.file.Sync(); err != nil {
			return err
		}
		if err := fsutil.SyncDir(filepath.Dir(path)); err != nil {
			return err
		}
		b = []byte(fileHeader)
	}
	if string(b[:len(fileHeader)]) != fileHeader {
		return fmt.Errorf("esdbdouble: %s is not a log of this double", path)
	}
	off := len(fileHeader)
	for off < len(b) {
		e, n, err := decodeRecord(b[off:], uint64(off))
		if errors.Is(err, errTorn) {
			break
		}
		if err != nil {
			return fmt.Errorf("esdbdouble: %s: %w", path, err)
		}
		if err := l.index(e); err != nil {
			return fmt.Errorf("esdbdouble: %s: %w", path, err)
		}
		off += n
	}
	if off < len(b) {
		if err := l.file.Truncate(int64(off)); err != nil {
			return err
		}
		if err := l.file.Sync(); err != nil {
			return err
		}
	}
	l.size = uint64(off)
	l.durable = len(l.events)
	_, err = l.file.Seek(int64(off), io.SeekStart)
	return err
}

func (l *eventLog) close() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed == nil {
		l.failed = errClosed
	}
	return l.file.Close()
}

var errClosed = errors.New("esdbdouble: closed")

// write appends evs (their positions and revisions already set to follow
// the log) to the file and the log. The caller holds mu. It returns the
// count of events the appender must wait to be durable.
func (l *eventLog) write(evs []*event) (int, error) {
	if l.failed != nil {
		return 0, l.failed
	}
	var buf []byte
	for _, e := range evs {
		e.pos = l.size + uint64(len(buf))
		buf = appendRecord(buf, e)
	}
	if _, err := l.file.Write(buf); err != nil {
		// The file may now end in part of these records: accept nothing
		// more; a restart cuts the tail off.
		l.failed = fmt.Errorf("esdbdouble: write: %w", err)
		return 0, l.failed
	}
	l.size += uint64(len(buf))
	for _, e := range evs {
		if err := l.index(e); err != nil {
			// The decision let through what the log cannot hold: a bug.
			l.failed = err
			return 0, err
		}
	}
	return len(l.events), nil
}

// index adds e to the end of the log and to its indexes: a tombstone to
// tombstones, any other event to its stream's. It fails when e does not
// follow its stream: a revision out of turn, or anything after the
// stream's tombstone.
func (l *eventLog) index(e *event) error {
	if _, gone := l.tombstones[e.stream]; gone {
		return fmt.Errorf("%w: event at %d follows the tombstone of %q", errCorrupt, e.pos, e.stream)
	}
	if e.isTombstone() {
		l.tombstones[e.stream] = len(l.events)
	} else {
		if want := uint64(len(l.streams[e.stream])); e.rev != want {
			return fmt.Errorf("%w: event at %d has revision %d of %q, want %d", errCorrupt, e.pos, e.rev, e.stream, want)
		}
		l.streams[e.stream] = append(l.streams[e.stream], len(l.events))
	}
	l.events = append(l.events, e)
	return nil
}

// waitDurable returns once events[:n] are on disk, fsyncing if no one
// else has yet.
func (l *eventLog) waitDurable(n int) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	for {
		l.mu.Lock()
		durable, written, failed := l.durable, len(l.events), l.failed
		l.mu.Unlock()
		if durable >= n {
			return nil
		}
		if failed != nil {
			return failed
		}
		if l.syncDelay > 0 {
			time.Sleep(l.syncDelay)
		}
		if err := l.file.Sync(); err != nil {
			// The kernel may have dropped the dirty pages: what was
			// written since the last fsync is in doubt, so the log stops.
			l.mu.Lock()
			l.failed = fmt.Errorf("esdbdouble: fsync: %w", err)
			l.mu.Unlock()
			return err
		}
		l.mu.Lock()
		if written > l.durable {
			l.durable = written
			close(l.wake)
			l.wake = make(chan struct{})
		}
		l.mu.Unlock()
	}
}

// watch returns how many events are durable and a channel closed when
// more are.
func (l *eventLog) watch() (int, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.durable, l.wake
}

// durableEvents returns events[from:to] with to capped at the durable count.
func (l *eventLog) durableEvents(from, to int) []*event {
	l.mu.Lock()
	defer l.mu.Unlock()
	to = min(to, l.durable)
	if from >= to {
		return nil
	}
	return l.events[from:to:to]
}

// streamView is what a read of a stream sees of it on disk.
type streamView struct {
	deleted  bool  // tombstoned: reads fail as deleted
	notFound bool  // no events, or soft-deleted: reads find no stream
	idx      []int // indexes in events of its events, by revision
	// first and last bound the revisions reads show under the stream's
	// metadata (none when first > last).
	first, last int64
}

// durableView returns what a read of stream at time now (100 ns ticks)
// sees, as on disk. A metadata stream of a tombstoned stream is deleted
// with it.
func (l *eventLog) durableView(stream string, now int64) streamView {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.durableTombstoneLocked(stream) {
		return streamView{deleted: true}
	}
	if orig, ok := isMetastream(stream); ok && l.durableTombstoneLocked(orig) {
		return streamView{deleted: true}
	}
	idx := l.streams[stream]
	n := sort.SearchInts(idx, l.durable)
	idx = idx[:n:n]
	m, _ := l.metadataOf(stream, l.durable)
	if len(idx) == 0 || m.truncateBefore == deletedStream {
		return streamView{notFound: true}
	}
	v := streamView{idx: idx}
	v.first, v.last = l.visible(idx, m, now)
	return v
}

// durableTombstoneLocked reports whether stream's tombstone is on disk.
// The caller holds mu.
func (l *eventLog) durableTombstoneLocked(stream string) bool {
	i, ok := l.tombstones[stream]
	return ok && i < l.durable
}

// tombstoned reports whether stream, or for a metadata stream the stream
// it belongs to, is tombstoned (on disk or not yet), and the count of
// events that must be durable for its tombstone to be. The caller holds mu.
func (l *eventLog) tombstoned(stream string) (bool, int) {
	if i, gone := l.tombstones[stream]; gone {
		return true, i + 1
	}
	if orig, ok := isMetastream(stream); ok {
		if i, gone := l.tombstones[orig]; gone {
			return true, i + 1
		}
	}
	return false, 0
}

// event returns the event at index i (which the caller knows exists).
func (l *eventLog) event(i int) *event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.events[i]
}

// indexOf returns the index of the durable event at pos, or of the first
// one after it, and whether one is at pos itself.
func (l *eventLog) indexOf(pos uint64) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	evs := l.events[:l.durable]
	i := sort.Search(len(evs), func(i int) bool { return evs[i].pos >= pos })
	return i, i < len(evs) && evs[i].pos == pos
}

// durableEnd is the position after the last durable event: the end of
// $all for readers.
func (l *eventLog) durableEnd() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.durable == len(l.events) {
		return l.size
	}
	return l.events[l.durable].pos
}

// idCache remembers the stream and revision of the event ids of the last
// appends, at most size of them, the oldest forgotten first. EventStoreDB
// checks appends with expected revision Any (or StreamExists) against such
// a bounded in-memory cache, which is why their idempotency is "best
// effort": an id that has left the cache, or was written before a restart,
// is not recognised and the events are appended again.
type idCache struct {
	size  int
	ids   map[[16]byte]idInfo
	order [][16]byte // ring, oldest at next
	next  int
}

type idInfo struct {
	stream string
	rev    uint64
}

func newIDCache(size int) *idCache {
	return &idCache{size: size, ids: make(map[[16]byte]idInfo)}
}

func (c *idCache) get(id [16]byte) (idInfo, bool) {
	v, ok := c.ids[id]
	return v, ok
}

func (c *idCache) put(id [16]byte, v idInfo) {
	if c.size <= 0 {
		return
	}
	if _, ok := c.ids[id]; !ok {
		if len(c.order) < c.size {
			c.order = append(c.order, id)
		} else {
			delete(c.ids, c.order[c.next])
			c.order[c.next] = id
			c.next = (c.next + 1) % c.size
		}
	}
	c.ids[id] = v
}
