package esdbdouble

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// The log file is a 16-byte header followed by records, each
//
//	body length uint32 | CRC32C of the body uint32 | body
//
// with the body
//
//	stream | revision uvarint | event id [16]byte | type | content type |
//	created int64 (100 ns ticks since the Unix epoch) | custom metadata | data
//
// where every string and byte slice is a uvarint length and its bytes. An
// event's position in $all is the offset of its record in the file, as
// EventStoreDB's positions are offsets in its transaction log: sparse and
// increasing.
const (
	fileHeader    = "tvsm esdbdouble1"
	recordPrefix  = 8
	maxRecordBody = 32 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var (
	// errTorn: the bytes end inside a record (an append cut short by a
	// crash before it was acknowledged).
	errTorn = errors.New("esdbdouble: record cut short")
	// errCorrupt: a complete record does not check out.
	errCorrupt = errors.New("esdbdouble: corrupt record")
)

// event is one stored event. Its byte slices are never modified.
type event struct {
	pos         uint64
	stream      string
	rev         uint64
	id          [16]byte
	typ         string
	contentType string
	created     int64 // 100 ns ticks since the Unix epoch
	meta        []byte
	data        []byte
}

// appendRecord appends e's record to dst.
func appendRecord(dst []byte, e *event) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, recordPrefix)...)
	dst = appendBytes(dst, []byte(e.stream))
	dst = binary.AppendUvarint(dst, e.rev)
	dst = append(dst, e.id[:]...)
	dst = appendBytes(dst, []byte(e.typ))
	dst = appendBytes(dst, []byte(e.contentType))
	dst = binary.BigEndian.AppendUint64(dst, uint64(e.created))
	dst = appendBytes(dst, e.meta)
	dst = appendBytes(dst, e.data)
	body := dst[start+recordPrefix:]
	binary.BigEndian.PutUint32(dst[start:], uint32(len(body)))
	binary.BigEndian.PutUint32(dst[start+4:], crc32.Checksum(body, castagnoli))
	return dst
}

func appendBytes(dst, b []byte) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(b))), b...)
}

// decodeRecord decodes the record at the start of b, which is at offset pos
// of the file, and returns it with its length. The event's byte slices
// alias b. It fails with errTorn when b ends inside the record and with
// errCorrupt when the record is complete but wrong.
func decodeRecord(b []byte, pos uint64) (*event, int, error) {
	if len(b) < recordPrefix {
		return nil, 0, errTorn
	}
	n := binary.BigEndian.Uint32(b)
	if n > maxRecordBody {
		if uint64(len(b)) < recordPrefix+uint64(n) {
			return nil, 0, errTorn
		}
		return nil, 0, fmt.Errorf("%w: body of %d bytes", errCorrupt, n)
	}
	end := recordPrefix + int(n)
	if len(b) < end {
		return nil, 0, errTorn
	}
	body := b[recordPrefix:end]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(b[4:]) {
		return nil, 0, fmt.Errorf("%w: checksum mismatch at %d", errCorrupt, pos)
	}
	d := decoder{b: body}
	e := &event{pos: pos}
	e.stream = string(d.bytes())
	e.rev = d.uvarint()
	copy(e.id[:], d.fixed(16))
	e.typ = string(d.bytes())
	e.contentType = string(d.bytes())
	e.created = int64(binary.BigEndian.Uint64(d.fixed(8)))
	e.meta = d.bytes()
	e.data = d.bytes()
	if d.err != nil || len(d.b) != 0 || e.stream == "" || e.typ == "" {
		return nil, 0, fmt.Errorf("%w: malformed body at %d", errCorrupt, pos)
	}
	return e, end, nil
}

// decoder reads a record body; after the first error every read returns
// zero values and err stays set.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) fixed(n int) []byte {
	if d.err != nil || len(d.b) < n {
		d.err = errCorrupt
		return make([]byte, n)
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.err = errCorrupt
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}
