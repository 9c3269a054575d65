package embedded

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"

	"tvsm/eventstore"
)

// Summary is what a copy of the store (or a store at rest) holds.
type Summary struct {
	Format uint64 // the data format (formatVersion for a copy this build made)
	Last   uint64 // position of its last event, 0 for none
	Events uint64 // how many events it holds: Last, since positions are dense from 1
}

// Checkpoint writes a consistent copy of the store into dir, which must
// not exist, while the store serves, and returns what the copy holds. The
// copy is pebble's own checkpoint (sstables hard-linked where dir is on
// the same file system, else copied) and a copy of the commit log's
// segments that pebble had not flushed when it began, each up to its last
// fsynced record: a store opened on the copy replays them, as at any
// start, and every append acknowledged before the call is in it. It holds
// whole groups only, a prefix of the log. Appends during the call may be
// in it or not: Summary.Last says which.
//
// There is no flush: one of up to a memtable (64 MiB) took a core for
// about as long as the rest of a backup, and the appends beside it got a
// quarter to a half of their rate. Copying the unflushed segments costs a
// read and a write of the same bytes, without sorting or compressing them.
//
// The sstables pebble flushes during the call may hold a group not yet
// acknowledged (its fsync runs beside the memtable insert), so
// Checkpoint returns only once the durable head has reached the copy's
// last event: nothing in the copy is a write the store could still fail.
func (s *Store) Checkpoint(ctx context.Context, dir string) (Summary, error) {
	select {
	case <-s.closing:
		return Summary{}, eventstore.ErrClosed
	default:
	}
	if errp := s.broken.Load(); errp != nil {
		return Summary{}, *errp
	}
	segs := s.commitLog.pin()
	defer s.commitLog.unpin()
	// Newest first: fsyncs go in the order of the records, so a segment
	// that shows records durable has every older one durable through its
	// end, and the copied records are a prefix of the log without a hole.
	ends := make([]int64, len(segs))
	for i := len(segs) - 1; i >= 0; i-- {
		ends[i] = segs[i].durable.Load()
	}
	// After the segments are listed: the sstables then hold at least what
	// the records before the first of them wrote.
	if err := s.db.Checkpoint(dir); err != nil {
		return Summary{}, fmt.Errorf("embedded: checkpoint: %w", err)
	}
	err := copySegments(segs, ends, filepath.Join(dir, commitLogDir))
	var sum Summary
	if err == nil {
		sum, err = summarize(dir)
	}
	if err == nil {
		err = s.waitDurable(ctx, sum.Last)
	}
	if err != nil {
		return Summary{}, errors.Join(err, os.RemoveAll(dir))
	}
	return sum, nil
}

// copySegments copies each segment up to its end into dir. The copies are
// not synced: a copy is staged to be read at once, and one a crash cut
// short is removed at the next start with the rest of the staging.
func copySegments(segs []*segment, ends []int64, dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("embedded: checkpoint: %w", err)
	}
	for i, seg := range segs {
		if ends[i] == 0 {
			continue
		}
		if err := copyPrefix(seg.path, filepath.Join(dir, filepath.Base(seg.path)), ends[i]); err != nil {
			return fmt.Errorf("embedded: checkpoint: commit log segment %d: %w", seg.seq, err)
		}
	}
	return nil
}

// copyPrefix copies the first n bytes of the file at from to a new file.
func copyPrefix(from, to string, n int64) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	got, err := io.Copy(dst, io.LimitReader(src, n)) // copy_file_range: no pass through user space
	if err == nil && got != n {
		err = fmt.Errorf("%d bytes of %d", got, n)
	}
	return errors.Join(err, dst.Close())
}

// summarize returns what the copy in dir holds from its last event key
// and its last record, without reading the rest: reading every key of a
// million events took a core for longer than the rest of the checkpoint.
// Inspect reads it all.
func summarize(dir string) (Summary, error) {
	db, err := pebble.Open(dir, &pebble.Options{ReadOnly: true, Logger: quietLogger{}})
	if err != nil {
		return Summary{}, fmt.Errorf("embedded: checkpoint: %w", err)
	}
	defer db.Close()
	last, err := lastEventPos(db)
	if err != nil {
		return Summary{}, fmt.Errorf("embedded: checkpoint: %w", err)
	}
	l := &commitLog{dir: filepath.Join(dir, commitLogDir)}
	segs, err := l.list()
	if err != nil {
		return Summary{}, fmt.Errorf("embedded: checkpoint: %w", err)
	}
	// The newest segment with a record holds the last one.
	for i := len(segs) - 1; i >= 0; i-- {
		seq := segs[i]
		data, err := os.ReadFile(l.path(seq))
		if err != nil {
			return Summary{}, fmt.Errorf("embedded: checkpoint: %w", err)
		}
		var final []byte
		for rest := data; ; {
			payload, n := decodeRecord(rest, seq)
			if n == 0 {
				break
			}
			final, rest = payload, rest[n:]
		}
		if final == nil {
			continue
		}
		b := db.NewBatch()
		err = b.SetRepr(final)
		var hi uint64
		if err == nil {
			_, hi, err = eventRange(b)
		}
		b.Close()
		if err != nil {
			return Summary{}, fmt.Errorf("embedded: checkpoint: commit log segment %d: %w", seq, err)
		}
		last = max(last, hi)
		break
	}
	return Summary{Format: formatVersion, Last: last, Events: last}, nil
}

// waitDurable returns once the durable head has reached pos.
func (s *Store) waitDurable(ctx context.Context, pos uint64) error {
	for {
		head, moved := s.head.watch()
		if head >= pos {
			return nil
		}
		if errp := s.broken.Load(); errp != nil {
			return *errp
		}
		select {
		case <-moved:
		case <-s.closing:
			return eventstore.ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Inspect opens the store in dir read-only (it must not be open) and reads
// its log from the first event to the last, the sstables' and then the
// commit log's that an open would replay: the format marker must be one
// this build reads, and positions dense from 1. With decode, every record
// is decoded too, as a read would; without, only the keys are read.
func Inspect(dir string, decode bool) (Summary, error) {
	if _, err := os.Stat(dir); err != nil {
		return Summary{}, fmt.Errorf("embedded: inspect: %w", err)
	}
	db, err := pebble.Open(dir, &pebble.Options{ReadOnly: true, Logger: quietLogger{}})
	if err != nil {
		return Summary{}, fmt.Errorf("embedded: inspect %s: %w", dir, err)
	}
	defer db.Close()
	var sum Summary
	v, closer, err := db.Get(metaKey("format"))
	if err != nil {
		return sum, fmt.Errorf("embedded: inspect %s: format marker: %w", dir, err)
	}
	if len(v) == 8 {
		sum.Format = binary.BigEndian.Uint64(v)
	}
	closer.Close()
	if sum.Format != formatVersion {
		return sum, fmt.Errorf("embedded: inspect %s: data format %d, this build reads %d", dir, sum.Format, formatVersion)
	}
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{kindEvent}, UpperBound: []byte{kindEvent + 1}})
	if err != nil {
		return sum, err
	}
	defer it.Close()
	dec := newDecoder()
	for ok := it.First(); ok; ok = it.Next() {
		key := it.Key()
		if len(key) != 9 {
			return sum, fmt.Errorf("embedded: inspect %s: an event key of %d bytes after position %d", dir, len(key), sum.Last)
		}
		pos := eventKeyPos(key)
		if pos != sum.Last+1 {
			return sum, fmt.Errorf("embedded: inspect %s: position %d follows %d", dir, pos, sum.Last)
		}
		if decode {
			if _, err := dec.decode(pos, it.Value()); err != nil {
				return sum, fmt.Errorf("embedded: inspect %s: event at %d: %w", dir, pos, err)
			}
		}
		sum.Last, sum.Events = pos, sum.Events+1
	}
	if err := it.Error(); err != nil {
		return sum, fmt.Errorf("embedded: inspect %s: %w", dir, err)
	}
	if err := inspectLog(db, filepath.Join(dir, commitLogDir), dec, decode, &sum); err != nil {
		return sum, fmt.Errorf("embedded: inspect %s: %w", dir, err)
	}
	return sum, nil
}

// inspectLog reads the records of the commit log in dir, if any, as a
// replay would, and counts the events they add after sum.Last: a record
// must not start past the next position (a hole, which an open would end
// the log at), and a segment's records must read through to its end (a
// copy holds whole records only).
func inspectLog(db *pebble.DB, dir string, dec *decoder, decode bool, sum *Summary) error {
	l := &commitLog{dir: dir}
	segs, err := l.list()
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, seq := range segs {
		data, err := os.ReadFile(l.path(seq))
		if err != nil {
			return err
		}
		rest := data
		for {
			payload, n := decodeRecord(rest, seq)
			if n == 0 {
				break
			}
			rest = rest[n:]
			if err := inspectRecord(db, payload, dec, decode, sum); err != nil {
				return fmt.Errorf("commit log segment %d: %w", seq, err)
			}
		}
		if len(rest) > 0 {
			return fmt.Errorf("commit log segment %d: %d bytes after its last whole record", seq, len(rest))
		}
	}
	return nil
}

// inspectRecord counts the events of one record past sum.Last.
func inspectRecord(db *pebble.DB, payload []byte, dec *decoder, decode bool, sum *Summary) error {
	b := db.NewBatch()
	defer b.Close()
	if err := b.SetRepr(payload); err != nil {
		return err
	}
	r := b.Reader()
	for {
		_, key, value, ok, err := r.Next()
		if err != nil || !ok {
			return err
		}
		if len(key) != 9 || key[0] != kindEvent {
			continue
		}
		pos := eventKeyPos(key)
		if pos <= sum.Last {
			continue // in the sstables too: a replay puts it again
		}
		if pos != sum.Last+1 {
			return fmt.Errorf("position %d follows %d", pos, sum.Last)
		}
		if decode {
			if _, err := dec.decode(pos, value); err != nil {
				return fmt.Errorf("event at %d: %w", pos, err)
			}
		}
		sum.Last, sum.Events = pos, sum.Events+1
	}
}

// quietLogger drops pebble's messages: a read-only look at a copy has no
// log of its own to write them to, and its failures come back as errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

// EventIDAt returns the id of the durable event at pos; found is false
// when the log does not reach pos. A backup made since an earlier one
// checks with it that the store still holds the log that one copied.
func (s *Store) EventIDAt(pos uint64) (id eventstore.EventID, found bool, err error) {
	if pos == 0 || pos > s.head.load() {
		return id, false, nil
	}
	e, err := s.eventAt(newDecoder(), pos)
	if err != nil {
		return id, false, fmt.Errorf("embedded: %w", err)
	}
	return e.ID, true, nil
}
