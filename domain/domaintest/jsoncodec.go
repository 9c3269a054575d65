package domaintest

import (
	"encoding/json"
	"reflect"
	"testing"

	"tvsm/domain"
)

// Checks for domain.JSONCodec implementations: they must write exactly what
// encoding/json writes and read exactly what it reads. Use both in a unit
// test with representative values and in a fuzz target.

// EncodesLikeJSON fails t unless e.AppendJSON writes what json.Marshal
// writes (after a prefix already in dst), or declines exactly when
// json.Marshal fails. It returns json.Marshal's bytes.
func EncodesLikeJSON[E domain.JSONCodec](t testing.TB, e E) []byte {
	t.Helper()
	want, err := json.Marshal(e)
	got, ok := e.AppendJSON([]byte("prefix"))
	if ok != (err == nil) || (ok && string(got) != "prefix"+string(want)) {
		t.Fatalf("%#v:\njson.Marshal %s (%v)\nAppendJSON   %s (%v)", e, want, err, got, ok)
	}
	return want
}

// DecodesLikeJSON fails t unless the DecodeJSON of a zero E, when it
// accepts data, gives what json.Unmarshal into a zero E gives. It reports
// whether DecodeJSON accepted.
func DecodesLikeJSON[E domain.JSONCodec](t testing.TB, data []byte) bool {
	t.Helper()
	var zero E
	fast, ok := zero.DecodeJSON(data)
	if !ok {
		return false
	}
	var slow E
	if err := json.Unmarshal(data, &slow); err != nil {
		t.Fatalf("DecodeJSON accepted %q, encoding/json refuses it: %v", data, err)
	}
	if !reflect.DeepEqual(fast, domain.Event(slow)) {
		t.Fatalf("%q:\nencoding/json %#v\nDecodeJSON    %#v", data, slow, fast)
	}
	return true
}

// RoundTripsLikeJSON is EncodesLikeJSON followed by DecodesLikeJSON of the
// bytes, which DecodeJSON must accept.
func RoundTripsLikeJSON[E domain.JSONCodec](t testing.TB, e E) {
	t.Helper()
	if data := EncodesLikeJSON(t, e); data != nil && !DecodesLikeJSON[E](t, data) {
		t.Fatalf("DecodeJSON declined %s", data)
	}
}
