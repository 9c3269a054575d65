package readmodel

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestIDList checks the chunked id list against a sorted slice through
// random inserts and removals, in order and out of order.
func TestIDList(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var l idList[struct{}]
	var ref []int64
	check := func() {
		t.Helper()
		if l.Len() != len(ref) {
			t.Fatalf("len %d, want %d", l.Len(), len(ref))
		}
		for _, skip := range []int{0, 1, len(ref) / 3, max(len(ref)-1, 0), len(ref), len(ref) + 5} {
			got := walkIDs(&l, false, skip)
			want := ref[min(skip, len(ref)):]
			if !slices.Equal(got, want) {
				t.Fatalf("ascend(%d): %d ids, want %d", skip, len(got), len(want))
			}
			got = walkIDs(&l, true, skip)
			rev := slices.Clone(ref)
			slices.Reverse(rev)
			if !slices.Equal(got, rev[min(skip, len(rev)):]) {
				t.Fatalf("descend(%d) differs", skip)
			}
		}
		for i, c := range l.chunks {
			if len(c) == 0 || len(c) > chunkMax {
				t.Fatalf("chunk %d has %d ids", i, len(c))
			}
		}
	}
	insert := func(id int64) {
		i, found := slices.BinarySearch(ref, id)
		if got := l.Insert(id); got == found {
			t.Fatalf("Insert(%d) = %v, already there: %v", id, got, found)
		}
		if !found {
			ref = slices.Insert(ref, i, id)
		}
	}
	remove := func(id int64) {
		i, found := slices.BinarySearch(ref, id)
		if got := l.Remove(id); got != found {
			t.Fatalf("Remove(%d) = %v, there: %v", id, got, found)
		}
		if found {
			ref = slices.Delete(ref, i, i+1)
		}
	}
	for id := int64(1); id <= 3000; id++ { // in order, as ids are allocated
		insert(id)
	}
	check()
	for range 3000 { // out of order, repeats included
		insert(rng.Int64N(6000))
	}
	check()
	for range 5000 {
		remove(rng.Int64N(6000))
	}
	check()
	for _, id := range slices.Clone(ref) { // mass deletion
		if id%7 != 0 {
			remove(id)
		}
	}
	check()
	if len(l.chunks) > len(ref)/(chunkMax/4)+2 {
		t.Errorf("%d chunks for %d ids: small chunks were not merged", len(l.chunks), len(ref))
	}
	for _, id := range ref {
		if !l.Contains(id) || l.Contains(id+1) && !slices.Contains(ref, id+1) {
			t.Fatalf("Contains around %d wrong", id)
		}
	}
	for _, id := range slices.Clone(ref) {
		remove(id)
	}
	check()
	if len(l.chunks) != 0 || l.Remove(1) || l.Contains(1) {
		t.Error("empty list misbehaves")
	}
}

func TestContainsFold(t *testing.T) {
	cases := []struct {
		s, needle string
		want      bool
	}{
		{"Ivan Petrov", "petrov", true},
		{"Ivan Petrov", "IVAN P", true},
		{"Ivan Petrov", "vanp", false},
		{"Вера Павловна", "павл", true},
		{"Вера Павловна", "ВЕРА", true},
		{"Straße 5", "STRASSE", false}, // simple folding only, rune by rune
		{"Straße 5", "ße", true},
		{"abc", "", true},
		{"", "a", false},
		{"ab", "abc", false},
		{"aaab", "aab", true},
		{"x\u212Ay", "xky", true}, // KELVIN SIGN lower-cases to k
		{"Ünïcödé", "üNÏ", true},
	}
	for _, c := range cases {
		if got := containsFold(c.s, foldNeedle(c.needle)); got != c.want {
			t.Errorf("containsFold(%q, %q) = %v, want %v", c.s, c.needle, got, c.want)
		}
	}
}

func TestScope(t *testing.T) {
	var zero Scope
	if zero.Allows(1) || ProviderScope(0).Allows(0) || ProviderScope(-3).Allows(-3) {
		t.Error("a scope without a provider allows rows")
	}
	if !AllProviders.Allows(5) || !ProviderScope(5).Allows(5) || ProviderScope(5).Allows(6) {
		t.Error("Allows is wrong")
	}
	if p, ok := ScopeOf(7, true).Provider(); !ok || p != 7 {
		t.Error("ScopeOf(7, true)")
	}
	if _, ok := ScopeOf(7, false).Provider(); ok || ScopeOf(7, false) != AllProviders {
		t.Error("ScopeOf(7, false)")
	}
}

func walkIDs[V any](l *idList[V], desc bool, skip int) []int64 {
	var out []int64
	for id := range l.Walk(desc, skip) {
		out = append(out, id)
	}
	return out
}

// TestIDListValues checks that values follow their ids through inserts
// out of order, chunk splits, replacements and removals.
func TestIDListValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var l idList[*int64]
	ref := map[int64]int64{}
	for i := range 20000 {
		id := rng.Int64N(5000)
		switch {
		case i%5 == 4:
			_, had := ref[id]
			if l.Remove(id) != had {
				t.Fatalf("Remove(%d) disagrees", id)
			}
			delete(ref, id)
		default:
			v := int64(i)
			_, had := ref[id]
			if l.Set(id, &v) == had {
				t.Fatalf("Set(%d) disagrees on insertion", id)
			}
			ref[id] = v
		}
	}
	if l.Len() != len(ref) {
		t.Fatalf("len %d, want %d", l.Len(), len(ref))
	}
	prev := int64(-1)
	for id, v := range l.Walk(false, 0) {
		if id <= prev || *v != ref[id] {
			t.Fatalf("entry %d = %d, want %d (previous id %d)", id, *v, ref[id], prev)
		}
		prev = id
	}
}
