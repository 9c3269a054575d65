package embedded

import (
	"encoding/binary"

	"tvsm/eventstore"
)

// Key layout. Every key starts with a one-byte kind so that the kinds occupy
// disjoint ranges and each can be scanned on its own.
//
//	'e' pos(8)                      → event record (see record.go)
//	's' stream 0x00 revision(8)     → pos(8): per-stream index
//	'i' eventID(16)                 → pos(8): event-id dedup index
//	'h' stream                      → revision(8) of the stream's last event,
//	                                  for streams past revision 0 only
//	'm' name                        → store metadata (format version)
//
// The head key lets an append learn a stream's revision with one
// bloom-filtered point lookup instead of a reverse seek over its index. A
// stream whose first index key ('s' stream 0x00 0) exists and that has no
// head key ends at revision 0: most streams are created by an append of one
// event (an account, a login reservation) and stay so until they change, and
// such an append writes three keys instead of four. Whether a stream exists
// is one lookup of its first index key.
//
// Integers are big-endian so that byte order is numeric order.
const (
	kindEvent  = 'e'
	kindStream = 's'
	kindID     = 'i'
	kindHead   = 'h'
	kindMeta   = 'm'
)

func eventKey(pos uint64) []byte { return appendEventKey(make([]byte, 0, 9), pos) }

// appendEventKey appends eventKey(pos) to dst.
func appendEventKey(dst []byte, pos uint64) []byte {
	dst = append(dst, kindEvent)
	return binary.BigEndian.AppendUint64(dst, pos)
}

// eventKeyPos returns the position encoded in an event key.
func eventKeyPos(k []byte) uint64 { return binary.BigEndian.Uint64(k[1:]) }

// streamPrefix is the common prefix of every index key of stream. Stream
// names never contain NUL (eventstore.ValidateStreamName), so the 0x00
// separator keeps "a" and "ab" apart.
func streamPrefix(stream string) []byte {
	return appendStreamPrefix(make([]byte, 0, len(stream)+10), stream)
}

func appendStreamPrefix(dst []byte, stream string) []byte {
	dst = append(dst, kindStream)
	dst = append(dst, stream...)
	return append(dst, 0)
}

func streamKey(stream string, rev uint64) []byte {
	return appendStreamKey(make([]byte, 0, len(stream)+10), stream, rev)
}

// appendStreamKey appends streamKey(stream, rev) to dst.
func appendStreamKey(dst []byte, stream string, rev uint64) []byte {
	return binary.BigEndian.AppendUint64(appendStreamPrefix(dst, stream), rev)
}

// streamUpperBound is the smallest key after every index key of stream.
func streamUpperBound(stream string) []byte {
	k := streamPrefix(stream)
	k[len(k)-1] = 1
	return k
}

func idKey(id eventstore.EventID) []byte { return appendIDKey(make([]byte, 0, 17), id) }

// appendIDKey appends idKey(id) to dst.
func appendIDKey(dst []byte, id eventstore.EventID) []byte {
	dst = append(dst, kindID)
	return append(dst, id[:]...)
}

func metaKey(name string) []byte { return append([]byte{kindMeta}, name...) }

func encodePos(pos uint64) []byte { return binary.BigEndian.AppendUint64(nil, pos) }

func headKey(stream string) []byte { return appendHeadKey(make([]byte, 0, len(stream)+1), stream) }

// appendHeadKey appends headKey(stream) to dst.
func appendHeadKey(dst []byte, stream string) []byte {
	dst = append(dst, kindHead)
	return append(dst, stream...)
}
