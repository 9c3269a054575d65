package httpapi

import "testing"

// FuzzEditDistance checks the distance behind misspelt-key hints on any
// pair of keys a client may send: a metric's properties, and that nearMiss
// never panics.
func FuzzEditDistance(f *testing.F) {
	for _, seed := range [][2]string{{"nmae", "name"}, {"logn", "login"}, {"Name", "name"}, {"", "x"}, {"tarif", "tariff"}, {"ab", "ba"}, {"\xff\xfe", "é"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a) > 200 || len(b) > 200 {
			return // quadratic; field names are short, and nearMiss checks lengths first
		}
		d := editDistance(a, b)
		if d != editDistance(b, a) {
			t.Fatalf("d(%q, %q) = %d, but d(%q, %q) = %d", a, b, d, b, a, editDistance(b, a))
		}
		if editDistance(a, a) != 0 {
			t.Fatalf("d(%q, itself) = %d", a, editDistance(a, a))
		}
		if lo, hi := min(len(a), len(b)), max(len(a), len(b)); d < hi-lo || d > hi {
			t.Fatalf("d(%q, %q) = %d, outside [%d, %d]", a, b, d, hi-lo, hi)
		}
		if (d == 0) != (a == b) {
			t.Fatalf("d(%q, %q) = %d", a, b, d)
		}
		_ = nearMiss(a, b)
	})
}
