package esdbdouble

import (
	"bytes"
	"errors"
	"testing"
)

func sampleEvent() *event {
	return &event{
		pos: 16, stream: "account-7", rev: 3, id: [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		typ: "AccountCreated.v1", contentType: "application/json", created: 17_000_000_000_000_000,
		meta: []byte(`{"actor":"x"}`), data: []byte(`{"id":7}`),
	}
}

func TestRecordRoundTrip(t *testing.T) {
	want := sampleEvent()
	b := appendRecord(nil, want)
	got, n, err := decodeRecord(b, want.pos)
	if err != nil || n != len(b) {
		t.Fatalf("decode: %v, %d of %d bytes", err, n, len(b))
	}
	if got.stream != want.stream || got.rev != want.rev || got.id != want.id || got.typ != want.typ ||
		got.contentType != want.contentType || got.created != want.created ||
		!bytes.Equal(got.meta, want.meta) || !bytes.Equal(got.data, want.data) || got.pos != want.pos {
		t.Fatalf("decoded %+v, want %+v", got, want)
	}
	for cut := range len(b) {
		if _, _, err := decodeRecord(b[:cut], 16); !errors.Is(err, errTorn) {
			t.Fatalf("record cut at %d: %v, want errTorn", cut, err)
		}
	}
	b[len(b)-1] ^= 1
	if _, _, err := decodeRecord(b, 16); !errors.Is(err, errCorrupt) {
		t.Fatalf("flipped bit: %v, want errCorrupt", err)
	}
}

// FuzzDecodeRecord feeds the log decoder arbitrary bytes (a log file is
// input from disk): it must never panic, and whatever it accepts must
// survive encoding and decoding again.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(appendRecord(nil, sampleEvent()))
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0, 0})
	f.Add(append(appendRecord(nil, sampleEvent()), 1, 2, 3))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, n, err := decodeRecord(b, 16)
		if err != nil {
			if !errors.Is(err, errTorn) && !errors.Is(err, errCorrupt) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if n < recordPrefix || n > len(b) {
			t.Fatalf("decoded %d bytes of %d", n, len(b))
		}
		again := appendRecord(nil, e)
		e2, n2, err := decodeRecord(again, 16)
		if err != nil || n2 != len(again) || e2.stream != e.stream || e2.rev != e.rev || e2.id != e.id ||
			e2.typ != e.typ || e2.contentType != e.contentType || e2.created != e.created ||
			!bytes.Equal(e2.meta, e.meta) || !bytes.Equal(e2.data, e.data) {
			t.Fatalf("re-encoded record decodes to %+v, %v; want %+v", e2, err, e)
		}
	})
}
