package esdbdouble

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
)

// FuzzMetadata feeds clients' metadata to the double's reader of it and to
// the rewrite of "$tb" on recreation: neither may fail on any input; a
// rewrite happens exactly for JSON objects, sets "$tb" and keeps every
// other member.
func FuzzMetadata(f *testing.F) {
	for _, seed := range []string{
		`{"$tb":9223372036854775807}`,
		`{"$maxCount":10,"$maxAge":3600,"$tb":2,"$cacheControl":60,"$acl":{"$r":"admin","$w":["a","b"]},"k":{"$tb":1}}`,
		`{"$tb":1,"$tb":2}`,
		`{"$maxCount":1.5}`,
		`{"$maxAge":99999999999999999999}`,
		`[1,2]`,
		`{"a":1} {}`,
		`{"$tmp":true}`,
		``,
	} {
		f.Add([]byte(seed), int64(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, tb int64) {
		m := parseMetadata(&event{contentType: contentTypeJSON, data: data})
		if m.truncateBefore < 0 || m.maxCount < 0 || m.maxAge < 0 {
			t.Fatalf("metadata %+v from %q: negative", m, data)
		}
		if tb < 0 {
			tb = 0
		}
		var in map[string]json.RawMessage
		isObject := json.Unmarshal(data, &in) == nil && in != nil
		out, ok := withTruncateBefore(data, tb)
		if ok != isObject {
			t.Fatalf("rewrite of %q: ok %v, but a JSON object: %v", data, ok, isObject)
		}
		if !ok {
			return
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("rewrite of %q is not JSON: %q: %v", data, out, err)
		}
		if string(got["$tb"]) != strconv.FormatInt(tb, 10) {
			t.Fatalf("rewrite of %q with $tb %d: %q", data, tb, out)
		}
		for k, v := range in {
			if k != "$tb" && !bytes.Equal(got[k], v) {
				t.Fatalf("rewrite of %q lost member %q: %q", data, k, out)
			}
		}
		if len(got) != len(in) && !(len(got) == len(in)+1 && in["$tb"] == nil) {
			t.Fatalf("rewrite of %q has members %d, want those of the original and $tb: %q", data, len(got), out)
		}
	})
}
