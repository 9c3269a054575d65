package embedded

import (
	"bytes"
	"slices"
	"testing"
)

// FuzzDecodeRecord: whatever a segment holds (a torn write, an old use of a
// recycled file, garbage), decodeRecord never panics and accepts only what
// encodeRecord wrote for that segment.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(encodeRecord(nil, 7, []byte("a batch")), uint64(7))
	f.Add(encodeRecord(nil, 6, []byte("an older use of the file")), uint64(7))
	f.Add(make([]byte, 64), uint64(1))
	f.Add(encodeRecord(nil, 3, []byte("cut"))[:12], uint64(3))
	f.Fuzz(func(t *testing.T, b []byte, seq uint64) {
		payload, n := decodeRecord(b, seq)
		if n == 0 {
			if payload != nil {
				t.Fatalf("no record, but a payload of %d bytes", len(payload))
			}
			return
		}
		if n > len(b) || len(payload) == 0 {
			t.Fatalf("record of %d bytes with a payload of %d, from %d bytes", n, len(payload), len(b))
		}
		if again := encodeRecord(nil, seq, payload); !bytes.Equal(again, b[:n]) {
			t.Fatalf("accepted %x, which encodeRecord writes as %x", b[:n], again)
		}
	})
}

func TestRecordRoundTrip(t *testing.T) {
	var log []byte
	for _, p := range []string{"first", "second, longer", "3"} {
		log = encodeRecord(log, 42, []byte(p))
	}
	log = append(log, make([]byte, 100)...) // the zeros after the last record
	var got []string
	for rest := log; ; {
		payload, n := decodeRecord(rest, 42)
		if n == 0 {
			break
		}
		got = append(got, string(payload))
		rest = rest[n:]
	}
	if want := []string{"first", "second, longer", "3"}; !slices.Equal(got, want) {
		t.Fatalf("decoded %q, want %q", got, want)
	}
	if _, n := decodeRecord(log, 41); n != 0 {
		t.Fatal("a record of segment 42 accepted in segment 41")
	}
}
