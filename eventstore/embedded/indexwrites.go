package embedded

import (
	"bytes"
	"encoding/binary"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// indexWrites collects a group's index keys (stream index, event id and
// head keys, each with a position or revision as value) so that they reach
// the batch sorted, after the event records. Pebble inserts a batch into the
// memtable in batch order and starts each key's search from the splice of
// the key before: keys in order are found almost at once, while the
// interleaved order of staging (record, stream key, id key, ..., head key)
// made every insert search the skiplist from its top. The event records
// need no sorting: their positions ascend as they are staged.
type indexWrites struct {
	arena []byte       // keys and values, back to back
	kvs   []indexWrite // in staging order until writeTo sorts them
}

// indexWrite is one key and its value, as offsets into the arena.
type indexWrite struct{ key, end uint32 } // value: arena[end-8:end]

// key returns the arena to append the next key to (see set).
func (w *indexWrites) key() []byte { return w.arena }

// set records the key just appended to the arena (arena is what the
// appending returned) with value v, and returns the key.
func (w *indexWrites) set(arena []byte, v uint64) []byte {
	start := len(w.arena)
	w.arena = binary.BigEndian.AppendUint64(arena, v)
	end := len(w.arena)
	w.kvs = append(w.kvs, indexWrite{key: uint32(start), end: uint32(end)})
	return w.arena[start : end-8]
}

func (w *indexWrites) keyOf(kv indexWrite) []byte { return w.arena[kv.key : kv.end-8] }

// writeTo adds the writes to b in key order. Writes of one key (a head
// written by two appends of the group) keep their staging order, so the
// last one wins as it would have unsorted.
func (w *indexWrites) writeTo(b *pebble.Batch) {
	slices.SortStableFunc(w.kvs, func(x, y indexWrite) int { return bytes.Compare(w.keyOf(x), w.keyOf(y)) })
	for _, kv := range w.kvs {
		_ = b.Set(w.keyOf(kv), w.arena[kv.end-8:kv.end], nil)
	}
	w.kvs = w.kvs[:0]
	w.arena = w.arena[:0]
}
