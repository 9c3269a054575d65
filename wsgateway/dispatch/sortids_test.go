package dispatch

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

func TestSortDevicesOrdersAsASort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := map[string][]int64{
		"empty":      {},
		"one":        {7},
		"short":      {5, 3, 9, 3, 1},
		"sorted":     ascending(5000),
		"descending": descending(5000),
		"extremes":   append(ascending(300), math.MaxInt64, math.MinInt64, 0, -1, 1, math.MaxInt64),
	}
	for _, n := range []int{radixMin - 1, radixMin, 1000, 10000} {
		small, wide, dup := make([]int64, n), make([]int64, n), make([]int64, n)
		for i := range n {
			small[i] = r.Int64N(1 << 24)                 // ids as they are given out
			wide[i] = int64(r.Uint64())                  // every byte varies, negatives too
			dup[i] = 1_000_000 + r.Int64N(int64(n/10+1)) // many repeats, a narrow range
		}
		cases["random small ids "+strconv.Itoa(n)] = small
		cases["random 64-bit "+strconv.Itoa(n)] = wide
		cases["repeats "+strconv.Itoa(n)] = dup
	}
	for name, in := range cases {
		got, want := slices.Clone(in), slices.Clone(in)
		sortDevices(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: not sorted as slices.Sort sorts", name)
		}
	}
}

func ascending(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i * 3)
	}
	return out
}

func descending(n int) []int64 {
	out := ascending(n)
	slices.Reverse(out)
	return out
}

// BenchmarkSortDevices sorts 10,000 device ids below 2^24 in random order,
// as a round lists them, with sortDevices and with slices.Sort.
func BenchmarkSortDevices(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	ids := make([]int64, 10000)
	for i := range ids {
		ids[i] = r.Int64N(1 << 24)
	}
	for _, s := range []struct {
		name string
		sort func([]int64)
	}{{"radix", sortDevices}, {"slices.Sort", slices.Sort[[]int64]}} {
		b.Run(s.name, func(b *testing.B) {
			work := make([]int64, len(ids))
			for b.Loop() {
				copy(work, ids)
				s.sort(work)
			}
		})
	}
}
