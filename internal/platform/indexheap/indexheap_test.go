package indexheap_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"tvsm/internal/platform/indexheap"
)

type item struct {
	key, index int
}

func (a *item) Less(b *item) bool { return a.key < b.key }
func (a *item) HeapIndex() *int   { return &a.index }

// TestHeapAgainstASortedList runs random pushes, pops, removes and fixes
// and compares every pop with a sorted reference; indices stay current.
func TestHeapAgainstASortedList(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h indexheap.Heap[item, *item]
	if h.Min() != nil || h.Len() != 0 {
		t.Fatal("the zero heap is not empty")
	}
	var in []*item // the reference: what is in the heap
	for step := range 20_000 {
		switch op := rng.IntN(4); {
		case op == 0 || len(in) == 0:
			x := &item{key: rng.IntN(1000)}
			h.Push(x)
			in = append(in, x)
		case op == 1:
			least := slices.MinFunc(in, func(a, b *item) int { return a.key - b.key })
			got := h.Pop()
			if got.key != least.key || got.index != -1 {
				t.Fatalf("step %d: popped key %d (index %d), want key %d", step, got.key, got.index, least.key)
			}
			in = slices.DeleteFunc(in, func(x *item) bool { return x == got })
		case op == 2:
			x := in[rng.IntN(len(in))]
			h.Remove(x)
			if x.index != -1 {
				t.Fatalf("step %d: removed item has index %d", step, x.index)
			}
			in = slices.DeleteFunc(in, func(y *item) bool { return y == x })
		default:
			x := in[rng.IntN(len(in))]
			x.key = rng.IntN(1000)
			h.Fix(x)
		}
		if h.Len() != len(in) {
			t.Fatalf("step %d: %d in the heap, want %d", step, h.Len(), len(in))
		}
		for _, x := range in {
			if x.index < 0 || x.index >= h.Len() {
				t.Fatalf("step %d: item %d has index %d of %d", step, x.key, x.index, h.Len())
			}
		}
		if len(in) > 0 && h.Min().key != slices.MinFunc(in, func(a, b *item) int { return a.key - b.key }).key {
			t.Fatalf("step %d: Min is %d", step, h.Min().key)
		}
	}
}
