package eventstore

import (
	"crypto/sha1"

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

// NewEventID returns a random (version 4) event ID, for events that no
// client request can retry (system events).
func NewEventID() EventID { return EventID(uuid.New()) }

// ParseEventID parses the textual UUID form.
func ParseEventID(s string) (EventID, error) {
	u, err := uuid.Parse(s)
	return EventID(u), err
}
