package domain_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"tvsm/domain"
)

// Checks that the JSONCodec building blocks and implementations agree with
// encoding/json: what they write is byte for byte json.Marshal's, and what
// they read is json.Unmarshal's (or left to it).

// jsonStrings are strings whose JSON form has every kind of escape.
var jsonStrings = []string{
	"", "alice", "Алиса Джонс", "😀 emoji", `"quoted" \back\slash /slash`,
	"<script>&amp;</script>", "line\nbreak\ttab\rcr\bbs\ffeed", "\x00\x01\x1f\x7f",
	"sep\u2028para\u2029", "bad \xff\xfe utf-8", "cut \xe2\x82", "\ufffd", "'single'",
}

// decodesLikeJSON fails unless decode, when it accepts data, gives what
// json.Unmarshal into a zero T gives. It reports whether decode accepted.
func decodesLikeJSON[T any](t *testing.T, data []byte, decode func([]byte) (T, bool)) bool {
	t.Helper()
	fast, ok := decode(data)
	if !ok {
		return false
	}
	var slow T
	if err := json.Unmarshal(data, &slow); err != nil {
		t.Fatalf("fast decode accepted %q, encoding/json refuses it: %v", data, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q:\nencoding/json %#v\nfast          %#v", data, slow, fast)
	}
	return true
}

// mustDecodeLikeJSON is decodesLikeJSON that also requires decode to accept
// (or refuse) data.
func mustDecodeLikeJSON[T any](t *testing.T, data []byte, want bool, decode func([]byte) (T, bool)) {
	t.Helper()
	if got := decodesLikeJSON(t, data, decode); got != want {
		t.Fatalf("fast decode of %q: accepted %v, want %v", data, got, want)
	}
}

// readWith reads one value with read and requires the reader to be done.
func readWith[T any](read func(*domain.JSONReader) T) func([]byte) (T, bool) {
	return func(data []byte) (T, bool) {
		r := domain.NewJSONReader(data)
		v := read(&r)
		return v, r.OK()
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range jsonStrings {
		want, _ := json.Marshal(s)
		if got := domain.AppendJSONString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("AppendJSONString(%q) = %s, want x%s", s, got, want)
		}
		mustDecodeLikeJSON(t, want, true, readWith((*domain.JSONReader).Str))
	}
}

func TestJSONReaderStrOtherForms(t *testing.T) {
	for data, want := range map[string]bool{
		`"\u00e9\u00C9\/\u0000"`: true, `"raw <>& and ` + "\u2028" + `"`: true, `"\ud83d\ude00"`: false,
		`"\'"`: false, `"\x"`: false, `"\u12"`: false, `"\u12g4"`: false, `"tab` + "\t" + `"`: false,
		`"bad ` + "\xff" + `"`: false, `"open`: false, `"a\`: false, `a"`: false, `""x`: false, ``: false,
	} {
		mustDecodeLikeJSON(t, []byte(data), want, readWith((*domain.JSONReader).Str))
	}
}

func TestJSONReaderNumbersAndBools(t *testing.T) {
	for data, want := range map[string]bool{
		"0": true, "-0": true, "12": true, "9223372036854775807": true, "-9223372036854775808": true,
		"9223372036854775808": false, "01": false, "1.0": false, "1e3": false, "-": false, "+1": false, "": false, " 1": false,
	} {
		mustDecodeLikeJSON(t, []byte(data), want, readWith((*domain.JSONReader).Int64))
		mustDecodeLikeJSON(t, []byte(data), want, readWith((*domain.JSONReader).Int))
	}
	for data, want := range map[string]bool{"true": true, "false": true, "tru": false, "True": false, "null": false, "1": false} {
		mustDecodeLikeJSON(t, []byte(data), want, readWith((*domain.JSONReader).Bool))
	}
}

func TestJSONReaderTime(t *testing.T) {
	for _, at := range []time.Time{
		time.Date(2026, 11, 22, 17, 59, 41, 123456789, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("", -90*60)),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
	} {
		want, _ := json.Marshal(at)
		if got, ok := domain.AppendJSONTime(nil, at); !ok || string(got) != string(want) {
			t.Errorf("AppendJSONTime(%v) = %s, %v; want %s", at, got, ok, want)
		}
		mustDecodeLikeJSON(t, want, true, readWith((*domain.JSONReader).Time))
	}
	if got, ok := domain.AppendJSONTime([]byte("x"), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)); ok || string(got) != "x" {
		t.Errorf("AppendJSONTime of year 10000 = %s, %v; want x, false", got, ok)
	}
	for _, data := range []string{`"2026-13-01T00:00:00Z"`, `"2026-01-01T00:00:00\u005a"`, `"2026-01-01 00:00:00Z"`, `null`, `"2026`} {
		mustDecodeLikeJSON(t, []byte(data), false, readWith((*domain.JSONReader).Time))
	}
}

func TestJSONReaderNextLeavesReaderOnMismatch(t *testing.T) {
	r := domain.NewJSONReader([]byte(`{"b":1}`))
	if r.Next(`{"a":`) || !r.Next(`{"b":`) || r.Int64() != 1 || r.Next(`,`) {
		t.Fatal("Next consumed a mismatch or missed a match")
	}
	r.Expect(`}`)
	if !r.OK() {
		t.Error("reader not done after the whole object")
	}
	r.Expect(`x`)
	if r.OK() || r.Null() || r.Str() != "" {
		t.Error("a failed reader keeps reading")
	}
}

// FuzzJSONString checks AppendJSONString against json.Marshal for any
// string, and JSONReader.Str against json.Unmarshal for the same bytes read
// as JSON, quoted and as they are.
func FuzzJSONString(f *testing.F) {
	for _, s := range jsonStrings {
		f.Add(s)
	}
	f.Add(`"\u00e9\ud83d\ude00\/"`)
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := domain.AppendJSONString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendJSONString(%q) = %s, want %s", s, got, want)
		}
		mustDecodeLikeJSON(t, want, true, readWith((*domain.JSONReader).Str))
		decodesLikeJSON(t, []byte(s), readWith((*domain.JSONReader).Str))
		decodesLikeJSON(t, []byte(`"`+s+`"`), readWith((*domain.JSONReader).Str))
		decodesLikeJSON(t, []byte(s), readWith((*domain.JSONReader).Int64))
	})
}

// jsonStringsJoined is one of each escape in a single string.
var jsonStringsJoined = strings.Join(jsonStrings, "|")
