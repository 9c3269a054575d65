package embedded

import (
	"encoding/binary"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// PebbleDB exposes the database to tests and benchmarks in this directory.
func (s *Store) PebbleDB() *pebble.DB { return s.db }

// WithSmallKeyFilters makes the committer start a new recent-key filter, and
// flush pebble, after every n keys it remembers (see recent.go), so that
// tests go through many rotations.
func WithSmallKeyFilters(o Options, n int) Options {
	o.filterGenKeys = n
	return o
}

// WithSmallSegments makes the commit log's first segment n bytes (the next
// ones double from there), so that tests go through many segments with
// little data.
func WithSmallSegments(o Options, n int64) Options {
	o.firstSegment = n
	return o
}

// DroppedKeyFilters is how many recent-key filters the committer has
// dropped after pebble flushed their keys.
func (s *Store) DroppedKeyFilters() int64 { return s.recent.dropped.Load() }

// Fsyncer makes a file's data, or data and metadata, durable.
type Fsyncer = fsyncer

// WithFsyncer makes the store's fsyncs go through f.
func WithFsyncer(o Options, f Fsyncer) Options {
	o.fsyncer = f
	return o
}

// HeadKeys returns the stream → revision of every head key in the store.
func (s *Store) HeadKeys() (map[string]uint64, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{kindHead}, UpperBound: []byte{kindHead + 1}})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	heads := map[string]uint64{}
	for ok := it.First(); ok; ok = it.Next() {
		heads[string(it.Key()[1:])] = binary.BigEndian.Uint64(it.Value())
	}
	return heads, it.Error()
}

// RewriteAsFormat2 turns the closed store in dir into what a format-2 build
// wrote: a head key for every stream, and the format-2 marker.
func RewriteAsFormat2(dir string) error {
	db, err := openRaw(dir)
	if err != nil {
		return err
	}
	defer db.Close()
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{kindStream}, UpperBound: []byte{kindStream + 1}})
	if err != nil {
		return err
	}
	last := map[string]uint64{}
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		stream := string(k[1 : len(k)-9]) // 's' stream 0x00 revision(8)
		last[stream] = binary.BigEndian.Uint64(k[len(k)-8:])
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return err
	}
	b := db.NewBatch()
	for stream, rev := range last {
		_ = b.Set(headKey(stream), encodePos(rev), nil)
	}
	_ = b.Set(metaKey("format"), encodePos(2), nil)
	return b.Commit(pebble.Sync)
}

// WriteFormatMarker sets the format marker of the closed store in dir.
func WriteFormatMarker(dir string, version uint64) error {
	db, err := openRaw(dir)
	if err != nil {
		return err
	}
	return errors.Join(db.Set(metaKey("format"), encodePos(version), pebble.Sync), db.Close())
}

// openRaw opens the pebble database of a closed store, quietly.
func openRaw(dir string) (*pebble.DB, error) {
	return pebble.Open(dir, &pebble.Options{FormatMajorVersion: pebble.FormatNewest, Logger: pebbleLogger{slog.New(slog.DiscardHandler)}})
}

// ReadFormatMarker returns the format marker of the closed store in dir.
func ReadFormatMarker(dir string) (uint64, error) {
	db, err := openRaw(dir)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	v, closer, err := db.Get(metaKey("format"))
	if err != nil {
		return 0, err
	}
	defer closer.Close()
	return binary.BigEndian.Uint64(v), nil
}

// WALFsyncs is how many fsyncs of its commit log the store has made since
// Open.
func (s *Store) WALFsyncs() uint64 { return s.wal.count.Load() }

// WALFsyncTime is how long the commit log's fsyncs since Open took
// together.
func (s *Store) WALFsyncTime() time.Duration { return time.Duration(s.wal.totalNs.Load()) }

// InFlight is how many appends the committer has taken and not yet
// answered.
func (s *Store) InFlight() int64 { return s.inFlight.Load() }

// WithFsyncTime makes the committer go by an fsync time of d instead of
// the measured one.
func WithFsyncTime(o Options, d time.Duration) Options {
	o.fsyncTime = d
	return o
}

// CloseAsCrash closes the store as a crash would leave it: pebble's
// memtable is not flushed, so what it held must come back from the commit
// log.
func (s *Store) CloseAsCrash() error {
	var err error
	s.once.Do(func() {
		close(s.closing)
		<-s.done
		err = errors.Join(s.commitLog.close(false), s.db.Close())
	})
	return err
}

// CommitLogFiles lists the files in the commit log directory of the store
// in dir: segments (NNN.seg) and spares.
func CommitLogFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(dir, commitLogDir))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, err
}

// CommitLogSegmentPath is the path of segment seq of the store in dir.
func CommitLogSegmentPath(dir string, seq uint64) string {
	return (&commitLog{dir: filepath.Join(dir, commitLogDir)}).path(seq)
}

// FlushedEvents counts the events in the sstables of the closed store in
// dir, without replaying its commit log.
func FlushedEvents(dir string) (uint64, error) {
	db, err := openRaw(dir)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{kindEvent}, UpperBound: []byte{kindEvent + 1}})
	if err != nil {
		return 0, err
	}
	var n uint64
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n, errors.Join(it.Error(), it.Close())
}

// CommitLogRecords returns the [start, end) offsets of the valid records
// of segment seq of the store in dir, in order.
func CommitLogRecords(dir string, seq uint64) ([][2]int, error) {
	data, err := os.ReadFile(CommitLogSegmentPath(dir, seq))
	if err != nil {
		return nil, err
	}
	var out [][2]int
	for off := 0; ; {
		_, n := decodeRecord(data[off:], seq)
		if n == 0 {
			return out, nil
		}
		out = append(out, [2]int{off, off + n})
		off += n
	}
}

// ReencodeRecord returns the record data[start:end] of a segment as
// segment seq would hold it.
func ReencodeRecord(data []byte, from, seq uint64) []byte {
	payload, _ := decodeRecord(data, from)
	return encodeRecord(nil, seq, payload)
}
