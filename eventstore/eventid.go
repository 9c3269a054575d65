package eventstore

import (
	"crypto/sha1"
	"encoding/binary"

	"github.com/google/uuid"
)

// eventIDNamespace scopes name-based event IDs to tvsm, so that the same
// request key in another system never yields the same UUIDs.
var eventIDNamespace = uuid.MustParse("6f0b6a8e-2d1c-4f7e-9a55-3c1f0e9d7b21")

// DeriveEventID returns the ID of the i-th event produced by the request named
// key (an idempotency key or request id). The same key and index always give
// the same ID, which is what makes a retried append a no-op.
func DeriveEventID(key string, i int) EventID {
	// A UUIDv5 (RFC 4122 §4.3) of namespace || key || 0 || uvarint(i), as
	// uuid.NewSHA1 makes it, but hashed from one stack buffer: this runs for
	// every appended event.
	var scratch [128]byte
	buf := append(scratch[:0], eventIDNamespace[:]...)
	buf = append(buf, key...)
	buf = append(buf, 0)
	for v := uint64(i); ; v >>= 7 {
		if v < 0x80 {
			buf = append(buf, byte(v))
			break
		}
		buf = append(buf, byte(v)|0x80)
	}
	sum := sha1.Sum(buf)
	var id EventID
	copy(id[:], sum[:])
	id[6] = id[6]&0x0f | 0x50 // version 5
	id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
	return id
}

// SequencedEventID is DeriveEventID(key, i) with its first 60 bits replaced
// by seq and its version set to 8 (RFC 9562's custom UUID). IDs of
// increasing seq sort in that order. A store indexes events by id, and ids
// that arrive in order are inserted at the end of that index instead of at a
// random place in it: in pebble's memtable that is a search along a path
// already in the CPU cache, and the sorted runs flushed from it hardly
// overlap. The last 62 bits still come from the hash of key and i, so the
// events of one seq differ, and two ids are equal only when seq (modulo
// 2^60), key hash and i agree.
func SequencedEventID(seq uint64, key string, i int) EventID {
	id := DeriveEventID(key, i)
	// Bytes 0-7: the high 48 bits of seq, the version nibble, the low 12 bits.
	s := seq & (1<<60 - 1)
	binary.BigEndian.PutUint64(id[:8], s>>12<<16|0x8<<12|s&0xfff)
	return id
}

// NewEventID returns a new time-ordered (version 7) event ID, for events
// that no client request can retry (system events, unkeyed device reports).
// Ordered ids reach a store's id index in order (see SequencedEventID).
// Like uuid.New, it panics only if crypto/rand fails.
func NewEventID() EventID { return EventID(uuid.Must(uuid.NewV7())) }

// ParseEventID parses the textual UUID form.
func ParseEventID(s string) (EventID, error) {
	u, err := uuid.Parse(s)
	return EventID(u), err
}
