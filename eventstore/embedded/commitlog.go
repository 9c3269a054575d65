package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"tvsm/internal/platform/fsutil"
)

// commitLog is the store's write-ahead log. Pebble runs without a WAL of its
// own: every group commit is one record here, which the committer writes
// and syncLoop fsyncs before the group is acknowledged, while the applier
// puts the same batch into pebble's memtable. Records are replayed into
// pebble when the store opens; a segment is recycled once pebble has
// flushed what it holds to sstables.
//
// Why not pebble's WAL: its fsync runs on pebble's flush goroutine, woken by
// the commit that wrote the batch, and the Go scheduler runs a goroutine
// woken that way on the waker's processor once the waker blocks (or when
// an idle processor has woken up and stolen it): the fsync started only
// after the memtable insert, 60–250 µs after the batch was written, on
// every group. Here the committer writes the record and blocks right after
// waking syncLoop (see Store.commit), and the memtable insert runs beside
// the fsync.
//
// Segments are files in the store's commitlog directory, named by sequence
// number and filled with zeros before use (or recycled): overwriting blocks
// a file already has lets fdatasync skip the metadata commit that growing a
// file needs, which measured about 40% of an fdatasync here. PostgreSQL's
// WAL does the same (wal_init_zero, wal_recycle).
type commitLog struct {
	dir   string
	first int64 // the size of the first segment a start makes (minSegment; tests set less)
	// discard are the segments from a hole on, found by the replay at open
	// and removed by start.
	discard []uint64
	fsync   func(*os.File) error // fdatasync, or the tests' fsyncer
	wal     *walSyncs            // times each fsync
	// cur is the segment being written; sealed are full ones whose records
	// pebble may not have flushed yet. The committer changes them under mu
	// and reads them without; a checkpoint reads them under mu (pin).
	cur    *segment
	sealed []*segment
	mu     sync.Mutex
	// pinned counts the checkpoints copying segments: while it is not
	// zero no segment is recycled, since a recycled file is overwritten.
	pinned int
	asked  bool   // for a spare since the last switch
	buf    []byte // the record being written

	prep spares
}

// segment is one file of the log. size is what it holds before the log
// moves on to the next one: filled with zeros up to there, unless it was
// made in a hurry.
type segment struct {
	f        *os.File
	path     string
	seq      uint64
	size     int64
	off      int64        // where the next record goes
	unsynced atomic.Int32 // records written and not yet fsynced
	// durable is the offset up to which the records are fsynced: syncLoop
	// raises it after each fsync, for checkpoints to copy.
	durable atomic.Int64
}

const (
	minSegment      = 1 << 20
	maxSegment      = 64 << 20
	logRecordHeader = 16 // crc32c u32 | length u32 | segment sequence u64
	segmentExt      = ".seg"
	sparePrefix     = "spare-"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// spares are files ready to become the next segment, kept by a background
// goroutine: a flushed segment recycled, or a new file filled with zeros.
type spares struct {
	mu      sync.Mutex
	ready   *segment // open, with no sequence number yet
	recycle []uint64 // flushed segments, oldest first
	// target is the size of the next new segment: small for a new store
	// (tests open hundreds), doubling up to maxSegment as the log grows.
	target int64
	made   int // names the spares
	wake   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	err    error // the last failure, reported by takeErr
}

// openCommitLog opens the log in dir, creating it if needed, and calls
// replay with the payload of every record it holds, oldest first. Once the
// caller has made what was replayed durable elsewhere, it calls start.
func openCommitLog(dir string, wal *walSyncs, syncFn func(*os.File) error, replay func(payload []byte) error) (*commitLog, []uint64, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	l := &commitLog{dir: dir, fsync: syncFn, wal: wal, first: minSegment}
	old, _ := filepath.Glob(filepath.Join(dir, sparePrefix+"*"))
	for _, path := range old {
		if err := os.Remove(path); err != nil {
			return nil, nil, err
		}
	}
	segs, err := l.list()
	if err != nil {
		return nil, nil, err
	}
	// Every segment's valid records are replayed in order. Segments are
	// recycled oldest first, so those present are the newest, without a
	// gap; a record whose write never finished (a crash) ends its segment.
	// A power loss can also lose a segment's last record and keep a later
	// segment's first: replay reports the hole that leaves in the
	// positions, and the log ends before it.
	for i, seq := range segs {
		err := l.replaySegment(seq, replay)
		if errors.Is(err, errLogHole) {
			l.discard = segs[i:]
			return l, segs[:i], nil
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return l, segs, nil
}

// start begins writing after the segments found at open, whose records
// must be durable in pebble by now: they are recycled.
func (l *commitLog) start(found []uint64) error {
	// What follows a hole was never acknowledged; what precedes it in the
	// same segment is in pebble now. Those segments go before the next
	// write reuses their positions, or a later replay would find them.
	for _, seq := range l.discard {
		if err := os.Remove(l.path(seq)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if len(l.discard) > 0 {
		if err := fsutil.SyncDir(l.dir); err != nil {
			return err
		}
		l.discard = nil
	}
	next := uint64(1)
	if len(found) > 0 {
		next = found[len(found)-1] + 1
	}
	first, err := l.newSegment(l.path(next), l.first)
	if err != nil {
		return err
	}
	first.seq = next
	l.cur = first
	l.prep = spares{recycle: found, target: l.first, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go l.keepSpare()
	if len(found) > 0 {
		l.kick()
	}
	return nil
}

func (l *commitLog) path(seq uint64) string {
	return filepath.Join(l.dir, fmt.Sprintf("%016d%s", seq, segmentExt))
}

// list returns the sequence numbers of the segments in the directory.
func (l *commitLog) list() ([]uint64, error) {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, err
	}
	var segs []uint64
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), segmentExt)
		if !ok {
			continue
		}
		seq, err := strconv.ParseUint(name, 10, 64)
		if err != nil {
			continue
		}
		segs = append(segs, seq)
	}
	slices.Sort(segs)
	return segs, nil
}

func (l *commitLog) replaySegment(seq uint64, replay func([]byte) error) error {
	data, err := os.ReadFile(l.path(seq))
	if err != nil {
		return err
	}
	for rest := data; ; {
		payload, n := decodeRecord(rest, seq)
		if n == 0 {
			return nil
		}
		if err := replay(payload); err != nil {
			return fmt.Errorf("commit log segment %d: %w", seq, err)
		}
		rest = rest[n:]
	}
}

// decodeRecord returns the payload of the record at the start of b and the
// bytes it takes, or n == 0 where the segment's records end: zeros, a
// record of an earlier use of a recycled file (another sequence number),
// or one whose write did not finish (short, or failing its checksum).
func decodeRecord(b []byte, seq uint64) (payload []byte, n int) {
	if len(b) < logRecordHeader {
		return nil, 0
	}
	size := binary.LittleEndian.Uint32(b[4:8])
	if size == 0 || binary.LittleEndian.Uint64(b[8:16]) != seq || uint64(size) > uint64(len(b)-logRecordHeader) {
		return nil, 0
	}
	end := logRecordHeader + int(size)
	if crc32.Checksum(b[4:end], castagnoli) != binary.LittleEndian.Uint32(b[0:4]) {
		return nil, 0
	}
	return b[logRecordHeader:end], end
}

// encodeRecord appends the record of payload in segment seq to dst.
func encodeRecord(dst []byte, seq uint64, payload []byte) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, logRecordHeader)...)
	binary.LittleEndian.PutUint32(dst[start+4:], uint32(len(payload)))
	binary.LittleEndian.PutUint64(dst[start+8:], seq)
	dst = append(dst, payload...)
	binary.LittleEndian.PutUint32(dst[start:], crc32.Checksum(dst[start+4:], castagnoli))
	return dst
}

// stage encodes payload as the next record, which write then writes; the
// caller may change payload once stage returns. It moves to the next
// segment first when the record does not fit in this one; if it cannot,
// the record goes on the end of this one, which grows the file: slower
// fsyncs until the next switch, nothing lost.
func (l *commitLog) stage(payload []byte) {
	if l.cur.off > 0 && l.cur.off+logRecordHeader+int64(len(payload)) > l.cur.size {
		if err := l.switchSegment(); err != nil {
			l.prep.setErr(fmt.Errorf("commit log: next segment: %w", err))
		}
	}
	l.buf = encodeRecord(l.buf[:0], l.cur.seq, payload)
}

// write writes the staged record and returns the segment it went to, for
// sync. A record larger than its segment grows the file: nothing is lost,
// only its fsync is slower.
func (l *commitLog) write() (*segment, error) {
	if _, err := l.cur.f.WriteAt(l.buf, l.cur.off); err != nil {
		return nil, fmt.Errorf("commit log write: %w", err)
	}
	l.cur.off += int64(len(l.buf))
	l.cur.unsynced.Add(1)
	if !l.asked && l.cur.off > l.cur.size/2 {
		l.asked = true
		l.kick() // the spare is wanted soon
	}
	return l.cur, nil
}

// sync fsyncs what has been written to seg, for one record written to it.
// The records are fsynced in the order they were written, so once it
// returns every record before is durable too.
func (l *commitLog) sync(seg *segment) error {
	defer seg.unsynced.Add(-1)
	start := time.Now()
	l.wal.count.Add(1)
	if err := l.fsync(seg.f); err != nil {
		return fmt.Errorf("commit log fsync: %w", err)
	}
	l.wal.observe(time.Since(start))
	return nil
}

// switchSegment seals the current segment and goes on in the spare, or in
// a new empty file of the size wanted when no spare is ready (it grows as
// it is written, so its fsyncs cost more until the next switch). On an
// error it stays on the current segment.
func (l *commitLog) switchSegment() error {
	seq := l.cur.seq + 1
	l.prep.mu.Lock()
	next := l.prep.ready
	l.prep.ready = nil
	size := l.prep.target
	l.prep.target = min(l.prep.target*2, maxSegment)
	l.prep.mu.Unlock()
	if next == nil {
		seg, err := l.newSegment(l.path(seq), 0)
		if err != nil {
			return err
		}
		seg.size = size
		next = seg
	} else if err := l.rename(next, l.path(seq)); err != nil {
		next.f.Close()
		return err
	}
	next.seq = seq
	l.mu.Lock()
	l.sealed = append(l.sealed, l.cur)
	l.cur = next
	l.mu.Unlock()
	l.asked = false
	return nil
}

// rename gives seg its path and makes that durable.
func (l *commitLog) rename(seg *segment, path string) error {
	if err := os.Rename(seg.path, path); err != nil {
		return err
	}
	seg.path = path
	return fsutil.SyncDir(l.dir)
}

// sealedCount is how many full segments await a pebble flush.
func (l *commitLog) sealedCount() int { return len(l.sealed) }

// flushed recycles the first of the first n sealed segments whose records
// pebble has since flushed to sstables, as long as their records are all
// fsynced (the file is closed), and returns how many it did.
func (l *commitLog) flushed(n int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pinned > 0 {
		return 0 // a checkpoint is copying them: the next group tries again
	}
	done := 0
	for done < n && l.sealed[done].unsynced.Load() == 0 {
		done++
	}
	l.prep.mu.Lock()
	for _, seg := range l.sealed[:done] {
		seg.f.Close()
		l.prep.recycle = append(l.prep.recycle, seg.seq)
	}
	l.prep.mu.Unlock()
	l.sealed = append(l.sealed[:0], l.sealed[done:]...)
	if done > 0 {
		l.kick()
	}
	return done
}

// pin keeps every segment from being recycled until unpin and returns
// them, oldest first: together they hold every record pebble had not
// flushed to sstables when pin returned (a segment is recycled only once
// a flush begun after it was sealed has ended).
func (l *commitLog) pin() []*segment {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pinned++
	return append(slices.Clone(l.sealed), l.cur)
}

func (l *commitLog) unpin() {
	l.mu.Lock()
	l.pinned--
	l.mu.Unlock()
}

func (l *commitLog) kick() {
	select {
	case l.prep.wake <- struct{}{}:
	default:
	}
}

// newSegment makes a file at path filled with size zero bytes, durable
// with its name.
func (l *commitLog) newSegment(path string, size int64) (*segment, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	zeros := make([]byte, min(size, 1<<20))
	for off := int64(0); off < size && err == nil; off += int64(len(zeros)) {
		_, err = f.WriteAt(zeros[:min(int64(len(zeros)), size-off)], off)
	}
	if err = errors.Join(err, f.Sync(), fsutil.SyncDir(l.dir)); err != nil {
		f.Close()
		return nil, err
	}
	return &segment{f: f, path: path, size: size}, nil
}

// keepSpare keeps one spare ready once asked: the oldest flushed segment
// of the size wanted, or a new file. A recycled file keeps its old records,
// which carry its old sequence number and so read as the end of the
// segment it becomes. Flushed segments not kept are removed, oldest first,
// so that those left are always the newest.
func (l *commitLog) keepSpare() {
	defer close(l.prep.done)
	for {
		select {
		case <-l.prep.stop:
			return
		case <-l.prep.wake:
		}
		l.prep.mu.Lock()
		recycle, target, have := l.prep.recycle, l.prep.target, l.prep.ready != nil
		l.prep.recycle = nil
		l.prep.mu.Unlock()
		var spare *segment
		var errs []error
		for _, seq := range recycle {
			path := l.path(seq)
			info, err := os.Stat(path)
			if err == nil && !have && spare == nil && info.Size() >= target {
				spare = &segment{path: path, size: info.Size()}
				if err = l.rename(spare, l.spareName()); err == nil {
					spare.f, err = os.OpenFile(spare.path, os.O_RDWR, 0)
				}
				if err != nil {
					spare = nil
				}
			} else if err == nil {
				err = os.Remove(path)
			}
			errs = append(errs, err)
		}
		if len(recycle) > 0 {
			errs = append(errs, fsutil.SyncDir(l.dir))
		}
		if !have && spare == nil {
			var err error
			spare, err = l.newSegment(l.spareName(), target)
			errs = append(errs, err)
		}
		l.prep.mu.Lock()
		if spare != nil {
			l.prep.ready = spare
		}
		if err := errors.Join(errs...); err != nil {
			l.prep.err = err
		}
		l.prep.mu.Unlock()
	}
}

func (l *commitLog) spareName() string {
	l.prep.made++
	return filepath.Join(l.dir, fmt.Sprintf("%s%d", sparePrefix, l.prep.made))
}

func (p *spares) setErr(err error) {
	p.mu.Lock()
	p.err = err
	p.mu.Unlock()
}

// takeErr returns and clears the last error of the background work, which
// costs speed (a segment that grows) but loses nothing.
func (l *commitLog) takeErr() error {
	l.prep.mu.Lock()
	defer l.prep.mu.Unlock()
	err := l.prep.err
	l.prep.err = nil
	return err
}

// close stops the background work and closes the files. When pebble has
// flushed everything (a clean close), flushed says so and the segments are
// removed, oldest first, so that those left by a crash meanwhile are still
// the newest.
func (l *commitLog) close(flushed bool) error {
	if l.prep.stop == nil {
		return nil
	}
	close(l.prep.stop)
	<-l.prep.done
	var errs []error
	for _, seg := range append(l.sealed, l.cur, l.prep.ready) {
		if seg != nil && seg.f != nil {
			errs = append(errs, seg.f.Close())
		}
	}
	if !flushed || errors.Join(errs...) != nil {
		return errors.Join(errs...)
	}
	segs, err := l.list()
	for _, seq := range segs {
		if err == nil {
			err = os.Remove(l.path(seq))
		}
	}
	if l.prep.ready != nil && err == nil {
		err = os.Remove(l.prep.ready.path)
	}
	return errors.Join(err, fsutil.SyncDir(l.dir))
}
