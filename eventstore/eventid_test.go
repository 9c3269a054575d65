package eventstore

import (
	"strings"
	"testing"

	"github.com/google/uuid"
)

// deriveWithLibrary is DeriveEventID as it was first written, with
// uuid.NewSHA1: stored event ids depend on it never changing.
func deriveWithLibrary(key string, i int) EventID {
	buf := append([]byte(key), 0)
	for v := uint64(i); ; v >>= 7 {
		if v < 0x80 {
			buf = append(buf, byte(v))
			break
		}
		buf = append(buf, byte(v)|0x80)
	}
	return EventID(uuid.NewSHA1(eventIDNamespace, buf))
}

func TestDeriveEventIDIsUUIDv5OfKeyAndIndex(t *testing.T) {
	keys := []string{"", "req|r1|abc|account-1|no-stream", "idem|k|login-1-ann|0123|0", strings.Repeat("long key ", 40), "ünïcode"}
	for _, key := range keys {
		for _, i := range []int{0, 1, 127, 128, 300, 1 << 20} {
			if got, want := DeriveEventID(key, i), deriveWithLibrary(key, i); got != want {
				t.Fatalf("DeriveEventID(%q, %d) = %v, want %v", key, i, got, want)
			}
		}
	}
	if got := DeriveEventID("x", 0).String(); got[14] != '5' {
		t.Fatalf("%s is not a version 5 UUID", got)
	}
}

func FuzzDeriveEventID(f *testing.F) {
	f.Add("req|r1|nonce|account-7|3", 2)
	f.Fuzz(func(t *testing.T, key string, i int) {
		if i < 0 {
			i = -i
		}
		if got, want := DeriveEventID(key, i), deriveWithLibrary(key, i); got != want {
			t.Fatalf("DeriveEventID(%q, %d) = %v, want %v", key, i, got, want)
		}
	})
}

// SequencedEventID keeps the last 8 bytes of DeriveEventID (variant
// included), puts seq in the first 8 around a version-8 nibble, and so
// orders ids as their seqs.
func TestSequencedEventIDOrdersBySeq(t *testing.T) {
	seqs := []uint64{0, 1, 0xfff, 0x1000, 0x1001, 1 << 40, uint64(1762000000000000) << 8, 1<<60 - 1}
	var prev EventID
	for n, seq := range seqs {
		id := SequencedEventID(seq, "req|r1|abc|account-1|no-stream", 1)
		derived := DeriveEventID("req|r1|abc|account-1|no-stream", 1)
		if [8]byte(id[8:]) != [8]byte(derived[8:]) {
			t.Fatalf("seq %#x: last 8 bytes %x, want DeriveEventID's %x", seq, id[8:], derived[8:])
		}
		u := uuid.UUID(id)
		if u.Version() != 8 || u.Variant() != uuid.RFC4122 {
			t.Fatalf("seq %#x: %v is version %d, variant %v; want 8, RFC 4122", seq, u, u.Version(), u.Variant())
		}
		if got := uint64(id[0])<<52 | uint64(id[1])<<44 | uint64(id[2])<<36 | uint64(id[3])<<28 | uint64(id[4])<<20 |
			uint64(id[5])<<12 | uint64(id[6]&0x0f)<<8 | uint64(id[7]); got != seq {
			t.Fatalf("seq %#x reads back as %#x from %v", seq, got, u)
		}
		if n > 0 && strings.Compare(string(prev[:]), string(id[:])) >= 0 {
			t.Fatalf("seq %#x: %v does not sort after the id of seq %#x, %v", seq, u, seqs[n-1], uuid.UUID(prev))
		}
		prev = id
	}
	if SequencedEventID(7, "k", 0) == SequencedEventID(7, "k", 1) {
		t.Fatal("two events of one seq share an id")
	}
}

func TestNewEventIDsAreVersion7AndAscend(t *testing.T) {
	prev := NewEventID()
	for range 1000 {
		id := NewEventID()
		if v := uuid.UUID(id).Version(); v != 7 {
			t.Fatalf("%v is version %d, want 7", uuid.UUID(id), v)
		}
		if strings.Compare(string(prev[:]), string(id[:])) >= 0 {
			t.Fatalf("%v does not sort after %v", uuid.UUID(id), uuid.UUID(prev))
		}
		prev = id
	}
}
