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
