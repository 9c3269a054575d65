package billing_test

import (
	"crypto/md5"
	"encoding/hex"
	"testing"

	"tvsm/internal/adapters/billing"
)

// TestSignMatchesIndependentMD5 is the must-show: the signature
// computed for a known path, token and body length matches an md5 computed
// here independently, and the literal digest (from md5sum).
func TestSignMatchesIndependentMD5(t *testing.T) {
	const (
		path   = "/api/switch"
		token  = "s3cret"
		length = 57
	)
	sum := md5.Sum([]byte("/api/switchs3cret57"))
	independent := hex.EncodeToString(sum[:])
	const literal = "84470aa72cb1ce0640d24f1015fe2178" // printf '/api/switchs3cret57' | md5sum
	got := billing.Sign(path, token, length)
	if got != independent || got != literal {
		t.Fatalf("Sign(%q, %q, %d) = %s, independent md5 %s, literal %s", path, token, length, got, independent, literal)
	}
}

// TestSignLeavesOutEmptyLength: no Content-Length, or 0, adds nothing.
func TestSignLeavesOutEmptyLength(t *testing.T) {
	const literal = "372647cd1c69ca4793d86b36e6fa4597" // printf '/api/cabinets3cret' | md5sum
	for _, n := range []int64{0, -1} {
		if got := billing.Sign("/api/cabinet", "s3cret", n); got != literal {
			t.Errorf("Sign with length %d = %s, want %s", n, got, literal)
		}
	}
}

func TestValidateHeaderPrefix(t *testing.T) {
	for _, ok := range []string{"X-TVSM-", "X-TVIP-", "x_op.", "A"} {
		if err := billing.ValidateHeaderPrefix(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "X TVSM-", "X-TVSM:", "X-\r\nEvil-", "X-ТВ-"} {
		if err := billing.ValidateHeaderPrefix(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := billing.NewClient(billing.Options{HeaderPrefix: "bad prefix"}); err == nil {
		t.Error("NewClient accepted a bad prefix")
	}
}

func TestParseTariffID(t *testing.T) {
	for s, want := range map[string]int64{"1": 1, "42": 42, "999999999999999999": 999999999999999999} {
		if got, ok := billing.ParseTariffID(s); !ok || got != want {
			t.Errorf("%q = %d, %v", s, got, ok)
		}
	}
	for _, bad := range []string{"", "0", "-1", "+1", "01", "1e3", "1.0", " 1", "1/../x", "9999999999999999999"} {
		if _, ok := billing.ParseTariffID(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
}
