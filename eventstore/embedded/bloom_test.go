package embedded

import (
	"math/rand/v2"
	"testing"
)

// A filter sized for n keys holds every key added (no false negatives) and
// rules out all but about 1.2% of keys never added.
func TestBloomGenHoldsItsKeysAndRulesOutOthers(t *testing.T) {
	const n = 100_000
	b := newBloomGen(n)
	r := rand.New(rand.NewPCG(1, 2))
	added := make([]uint64, n)
	for i := range added {
		added[i] = r.Uint64()
		b.add(added[i])
	}
	for _, h := range added {
		if !b.has(h) {
			t.Fatalf("key %x added but not found", h)
		}
	}
	positives := 0
	const probes = 1_000_000
	for range probes {
		if b.has(r.Uint64()) {
			positives++
		}
	}
	if rate := float64(positives) / probes; rate > 0.02 {
		t.Fatalf("false-positive rate %.2f%% at %d bits per key, want under 2%%", 100*rate, bloomBitsKey)
	} else {
		t.Logf("false-positive rate %.2f%%", 100*rate)
	}
}
