package tvipimport

import (
	"strings"
	"testing"
)

// FuzzReadPins: any file gives pins that are 32 lower-case hex digits for
// non-empty logins, or an error naming a line; never a panic.
func FuzzReadPins(f *testing.F) {
	f.Add("login,pin_md5\nanna,0123456789abcdef0123456789ABCDEF\n")
	f.Add("bob,\"0123456789abcdef0123456789abcdef\"\n\n")
	f.Add("a,b,c\n")
	f.Add("\"unterminated,0123\n")
	f.Fuzz(func(t *testing.T, text string) {
		pins, err := ReadPins(strings.NewReader(text))
		if err != nil {
			if pins != nil {
				t.Fatalf("pins %v beside error %v", pins, err)
			}
			return
		}
		for login, pin := range pins {
			if login == "" || !isDigest(pin) {
				t.Fatalf("pin %q for login %q", pin, login)
			}
		}
	})
}

// FuzzSame: the comparison of the source's values with the target's is
// reflexive and symmetric on any JSON values, and never panics.
func FuzzSame(f *testing.F) {
	f.Add(`"2024-01-15T10:00:00+0300"`, `"2024-01-15T07:00:00+0000"`)
	f.Add(`1`, `true`)
	f.Add(`""`, `null`)
	f.Add(`[3,1,2]`, `[1,2,3]`)
	f.Add(`"12"`, `12`)
	f.Add(`{"a":[1,{"b":null}]}`, `{"a":[{"b":""},1]}`)
	f.Fuzz(func(t *testing.T, a, b string) {
		va, oka := decode(a)
		vb, okb := decode(b)
		if !oka || !okb {
			return
		}
		if !same(va, va) || !same(vb, vb) {
			t.Fatalf("not reflexive: %s, %s", a, b)
		}
		if same(va, vb) != same(vb, va) {
			t.Fatalf("not symmetric: %s, %s", a, b)
		}
		_ = show(va)
		if d := differing([]string{"x"}, object{"x": va}, object{"x": vb}); (len(d) == 0) != same(va, vb) {
			t.Fatalf("differing disagrees with same: %s, %s", a, b)
		}
	})
}

func decode(s string) (any, bool) {
	var v any
	if err := decodeJSON([]byte(s), &v); err != nil {
		return nil, false
	}
	return v, true
}
