package testutil

import "slices"

// Median returns the middle value of xs (the upper one of an even count),
// 0 for none: the figure benchmarks report of their repeated rounds.
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
