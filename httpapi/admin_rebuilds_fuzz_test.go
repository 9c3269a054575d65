package httpapi

import (
	"slices"
	"testing"

	"tvsm/httpapi/wire"
)

// FuzzRebuildDecode feeds arbitrary bodies to the decoder of POST
// /api/admin/rebuilds. It must never panic; a body it accepts names one of
// the targets, and a body it refuses names each bad field.
func FuzzRebuildDecode(f *testing.F) {
	for _, seed := range []string{
		`{"target":"readmodel"}`, `{"target":"stats","verify":true}`, `{"target":"stats","verify":"1"}`,
		`{"target":"everything"}`, `{}`, `{"target":5,"verify":null}`, `{"target":"readmodel","verfy":true}`,
		`{"target":["readmodel"]}`, `[]`, `null`, ``, `{"target":`,
	} {
		f.Add([]byte(seed))
	}
	targets := []string{"readmodel", "stats"}
	f.Fuzz(func(t *testing.T, data []byte) {
		var target string
		if _, ok := fuzzDecode(t, "rebuild", data, func(o *wire.Object) any {
			target, _ = decodeRebuildObject(o, targets)
			return nil
		}); ok && !slices.Contains(targets, target) {
			t.Fatalf("accepted target %q", target)
		}
	})
}
