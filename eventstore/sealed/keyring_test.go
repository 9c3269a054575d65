package sealed

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
)

// countingKeys counts the loads of a key store.
type countingKeys struct {
	KeyStore
	loads atomic.Int64
}

func (c *countingKeys) Load(ctx context.Context, subject int64) (WrappedKey, error) {
	c.loads.Add(1)
	return c.KeyStore.Load(ctx, subject)
}

// Given more subjects than the keyring keeps ciphers for, when their values
// are opened again, then the ciphers are made again from the keys kept,
// without a load from the key store (a read over the network when nodes
// share it); past the keys' own bound, the store is read again; and a
// subject forgotten (erased elsewhere) is not opened from a kept key.
func TestKeyringKeepsKeysBeyondItsCiphers(t *testing.T) {
	store := &countingKeys{KeyStore: newMemKeys()}
	ring := NewKeyring(store, mustMaster(t))
	ring.limit, ring.keyLimit = 8, 200
	sealed := map[int64][]byte{}
	for s := int64(1); s <= 100; s++ {
		out, err := ring.SealText(s, "name", []byte(fmt.Sprint("subject ", s)))
		if err != nil {
			t.Fatal(err)
		}
		sealed[s] = out
	}
	openAll := func() {
		t.Helper()
		for s := int64(1); s <= 100; s++ {
			plain, erased, err := ring.OpenText(s, "name", sealed[s])
			if err != nil || erased || string(plain) != fmt.Sprint("subject ", s) {
				t.Fatalf("subject %d: %q erased=%v %v", s, plain, erased, err)
			}
		}
	}
	before := store.loads.Load()
	openAll()
	if n := store.loads.Load() - before; n != 0 {
		t.Fatalf("%d key loads opening 100 subjects whose keys were kept, want none", n)
	}

	ring.Forget(50)
	if _, erased, err := ring.OpenText(50, "name", sealed[50]); err != nil || !erased {
		t.Fatalf("a forgotten subject: erased=%v %v", erased, err)
	}

	// A keyring keeping the keys of 16 subjects reads most of 100 again.
	ring = NewKeyring(store, mustMaster(t))
	ring.limit, ring.keyLimit = 8, 16
	before = store.loads.Load()
	openAll()
	if n := store.loads.Load() - before; n < 50 {
		t.Fatalf("%d key loads for 100 subjects with 16 keys kept, want most of them read", n)
	}
	if len(ring.keys) > 16 || len(ring.cache) > 8 {
		t.Fatalf("%d keys and %d ciphers kept, bounds 16 and 8", len(ring.keys), len(ring.cache))
	}
}
