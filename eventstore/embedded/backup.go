package embedded

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"

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
// the same file system, else copied) taken right after a flush: every
// append acknowledged before the call is in it, and it holds whole groups
// only, a prefix of the log, since the applier puts them into pebble in
// order. Appends during the call may be in it or not: Summary.Last says
// which. The copy needs no commit log: a store opened on it finds none and
// starts an empty one.
//
// A flushed group may not be acknowledged yet (its fsync runs beside the
// memtable insert), so Checkpoint returns only once the durable head has
// reached the copy's last event: nothing in the copy is a write the store
// could still fail.
func (s *Store) Checkpoint(ctx context.Context, dir string) (Summary, error) {
	select {
	case <-s.closing:
		return Summary{}, eventstore.ErrClosed
	default:
	}
	if errp := s.broken.Load(); errp != nil {
		return Summary{}, *errp
	}
	if err := s.db.Flush(); err != nil {
		return Summary{}, fmt.Errorf("embedded: checkpoint: flush: %w", err)
	}
	if err := s.db.Checkpoint(dir); err != nil {
		return Summary{}, fmt.Errorf("embedded: checkpoint: %w", err)
	}
	sum, err := Inspect(dir, false)
	if err == nil {
		err = s.waitDurable(ctx, sum.Last)
	}
	if err != nil {
		return Summary{}, errors.Join(err, os.RemoveAll(dir))
	}
	return sum, nil
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
// its log from the first event to the last: the format marker must be one
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
	return sum, nil
}

// quietLogger drops pebble's messages: a read-only look at a copy has no
// log of its own to write them to, and its failures come back as errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
