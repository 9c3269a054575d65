package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
	"unsafe"

	"tvsm/eventstore"
)

// recordVersion is the first byte of every stored event record.
const recordVersion = 1

// record layout:
//
//	version(1) eventID(16) revision(uvarint) created-unix-nanos(varint)
//	stream(len-prefixed) type(len-prefixed) data(len-prefixed) metadata(len-prefixed)
//
// Lengths are uvarints. The position is not stored: it is the key.
func appendRecord(buf []byte, stream string, rev uint64, created time.Time, e eventstore.EventData) []byte {
	buf = append(buf, recordVersion)
	buf = append(buf, e.ID[:]...)
	buf = binary.AppendUvarint(buf, rev)
	buf = binary.AppendVarint(buf, created.UnixNano())
	buf = appendBytes(buf, []byte(stream))
	buf = appendBytes(buf, []byte(e.Type))
	buf = appendBytes(buf, e.Data)
	return appendBytes(buf, e.Metadata)
}

func appendBytes(buf, b []byte) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(b)))
	return append(buf, b...)
}

var errCorruptRecord = errors.New("embedded: corrupt event record")

// decoder turns stored records into RecordedEvents. It interns event types and
// repeats of the previous stream name, which replay sees constantly, so that
// decoding allocates little beyond the event's own bytes.
type decoder struct {
	types      map[string]string
	lastStream string
	arena      arena // payloads are carved from here
}

// arena hands out payload buffers carved from larger chunks.
type arena struct {
	free  []byte // the rest of the current chunk
	chunk int    // size of the last chunk
}

// Payloads are carved from arena chunks that start small (a ReadStream of
// one aggregate needs a few hundred bytes) and double up to maxArena (a
// replay batch), so neither case pays for the other. Events of one chunk
// keep it alive together, which suits batches that are used and dropped
// whole.
const (
	minArena = 4 << 10
	maxArena = 256 << 10
)

// alloc returns n bytes for a payload, capped so that appending to one
// event's Data cannot overwrite the next event's.
func (a *arena) alloc(n int) []byte {
	if n > maxArena/8 {
		return make([]byte, n)
	}
	if len(a.free) < n {
		a.chunk = min(max(2*a.chunk, minArena), maxArena)
		a.free = make([]byte, max(a.chunk, n))
	}
	b := a.free[:n:n]
	a.free = a.free[n:]
	return b
}

func newDecoder() *decoder { return &decoder{types: make(map[string]string)} }

// decode parses v, the record stored at pos. v may be reused by the caller
// afterwards: the event's Data and Metadata are copied.
func (d *decoder) decode(pos uint64, v []byte) (eventstore.RecordedEvent, error) {
	var e eventstore.RecordedEvent
	if len(v) < 17 || v[0] != recordVersion {
		return e, fmt.Errorf("%w at position %d", errCorruptRecord, pos)
	}
	copy(e.ID[:], v[1:17])
	r := reader{b: v[17:]}
	e.Revision = r.uvarint()
	nanos := r.varint()
	stream := r.bytes()
	typ := r.bytes()
	data := r.bytes()
	meta := r.bytes()
	if r.bad || len(r.b) != 0 {
		return e, fmt.Errorf("%w at position %d", errCorruptRecord, pos)
	}
	e.Position = eventstore.Position{Commit: pos, Prepare: pos}
	e.Created = time.Unix(0, nanos).UTC()
	if string(stream) == d.lastStream {
		e.Stream = d.lastStream
	} else {
		e.Stream = string(stream)
		d.lastStream = e.Stream
	}
	t, ok := d.types[string(typ)]
	if !ok {
		t = string(typ)
		if len(d.types) < 4096 { // bound the intern table against pathological logs
			d.types[t] = t
		}
	}
	e.Type = t
	payload := d.arena.alloc(len(data) + len(meta))
	copy(payload, data)
	copy(payload[len(data):], meta)
	if len(data) > 0 {
		e.Data = payload[:len(data):len(data)]
	}
	if len(meta) > 0 {
		e.Metadata = payload[len(data):]
	}
	return e, nil
}

// recordHeader returns the stream and revision of a record without decoding
// the rest; the dedup path uses it.
func recordHeader(v []byte) (stream string, rev uint64, err error) {
	rev, s, _, err := parseHeader(v)
	return string(s), rev, err
}

// parseHeader reads a record up to its type; stream and typ alias v.
func parseHeader(v []byte) (rev uint64, stream, typ []byte, err error) {
	if len(v) < 17 || v[0] != recordVersion {
		return 0, nil, nil, errCorruptRecord
	}
	r := reader{b: v[17:]}
	rev = r.uvarint()
	r.varint()
	stream = r.bytes()
	typ = r.bytes()
	if r.bad {
		return 0, nil, nil, errCorruptRecord
	}
	return rev, stream, typ, nil
}

// reader is a bounds-checked cursor; the first failure sets bad and every later
// call returns zero values.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) uvarint() uint64 {
	if r.bad {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.bad {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes() []byte {
	n := r.uvarint()
	if r.bad || n > uint64(len(r.b)) {
		r.bad = true
		return nil
	}
	b := r.b[:n]
	r.b = r.b[n:]
	return b
}

// recordNames returns the stream and type of a record as strings that alias
// v: valid only while v is, which is enough for matching a filter and saves
// two allocations per filtered-out event.
func recordNames(v []byte) (stream, typ string, err error) {
	_, s, t, err := parseHeader(v)
	if err != nil {
		return "", "", err
	}
	return unsafe.String(unsafe.SliceData(s), len(s)), unsafe.String(unsafe.SliceData(t), len(t)), nil
}
