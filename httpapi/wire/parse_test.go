package wire

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// parseSeeds are valid objects in the forms the fast path must take, with
// the escapes, numbers and nesting encoding/json is compared on.
var parseSeeds = []string{
	`{}`, ` { } `, "\t{\r\n\"a\" :\t1 }\n",
	`{"id":null,"enabled":1,"login":"anna","provider":"7","pin_md5":"0cc175b9c0f1b6a831c399e269772661","created":"2026-01-01T00:00:00+0000","provider_dto":null}`,
	`{"n":[0,-0,12,-3.25,1e9,1E+2,2.5e-3,-0.0e-5,9223372036854775808,1e99999999999999999999]}`,
	`{"t":true,"f":false,"z":null,"e":"","a":[],"o":{},"aa":[[],{}],"deep":{"a":{"b":[{"c":[1,[2,[3]]]}]}}}`,
	`{"esc":"q\" b\\ s\/ \b\f\n\r\t end","u":"\u0041\u00e9\u20AC\u0000","pair":"\ud83d\ude00","lone":"\ud800 x \udc00","half":"\ud83d\u0041","hi":"\uD83D\uDE00"}`,
	`{"name":"Анна Пример","emoji":"😀","mixed":"a\u0431é\n"}`,
	`{"dup":1,"dup":"2","nested":{"dup":[1],"dup":null}}`,
	`{"commands":[{"command":"user_message","post_time":"2026-11-22T17:59:41","ttl":1764000000},{"command":"reboot"}]}`,
}

// depth is the nesting of objects and arrays in v.
func depth(v any) int {
	d := 0
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			d = max(d, depth(x))
		}
		return d + 1
	case []any:
		for _, x := range v {
			d = max(d, depth(x))
		}
		return d + 1
	}
	return 0
}

// checkParseObject holds parseObject to encoding/json on data: what the
// fast path takes, encoding/json takes as the same values; and it takes
// every valid object of valid UTF-8 and moderate nesting.
func checkParseObject(t *testing.T, data []byte) {
	t.Helper()
	fast, ok := parseObject(data)
	ref, err := decodeJSON(data)
	switch {
	case ok && err != nil:
		t.Fatalf("fast path takes %q, encoding/json refuses it: %v", data, err)
	case ok && !reflect.DeepEqual(fast, ref):
		t.Fatalf("fast path reads %q as\n%#v\nencoding/json as\n%#v", data, fast, ref)
	case !ok && err == nil && ref != nil && utf8.Valid(data) && depth(ref) <= maxParseDepth:
		t.Fatalf("fast path refuses %q, which encoding/json takes", data)
	}
}

func TestParseObjectMatchesJSON(t *testing.T) {
	for _, seed := range parseSeeds {
		if _, ok := parseObject([]byte(seed)); !ok {
			t.Errorf("fast path refuses %s", seed)
		}
		checkParseObject(t, []byte(seed))
	}
	// Invalid JSON, and valid JSON left to encoding/json (invalid UTF-8,
	// deep nesting).
	for _, bad := range []string{
		``, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1}x`, `{"a":1}{}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`,
		`{"a":1e}`, `{"a":-}`, `{"a":+1}`, `{"a":tru}`, `{"a":nulll}`, `{"a":"x}`, `{"a":"\x"}`, `{"a":"\u12"}`,
		"{\"a\":\"tab\there\"}", `{"a":[1,]}`, `{"a":[1 2]}`, `{a:1}`, `{"a":1 "b":2}`, `["a"]`, `null`,
		"{\"a\":\"\xff\"}", `{"a":` + strings.Repeat(`[`, maxParseDepth) + strings.Repeat(`]`, maxParseDepth) + `}`,
	} {
		if _, ok := parseObject([]byte(bad)); ok {
			t.Errorf("fast path takes %q", bad)
		}
		checkParseObject(t, []byte(bad))
	}
}

// TestDecodeObjectFallback: what the fast path leaves to encoding/json is
// decoded as before (invalid UTF-8 replaced, deep nesting followed).
func TestDecodeObjectFallback(t *testing.T) {
	o, err := DecodeObject([]byte("{\"a\":\"x\xffy\"}"), DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := o.String("a").Value; got != "x\uFFFDy" {
		t.Errorf("invalid UTF-8 read as %q", got)
	}
	deep := `{"a":` + strings.Repeat(`[`, 100) + strings.Repeat(`]`, 100) + `}`
	if o, err = DecodeObject([]byte(deep), DecodeOptions{}); err != nil || !o.Has("a") {
		t.Errorf("deep body: %v", err)
	}
}

// FuzzParseObjectMatchesJSON: the fast path never panics, agrees with
// encoding/json on everything it takes, and takes what it should.
func FuzzParseObjectMatchesJSON(f *testing.F) {
	for _, seed := range parseSeeds {
		f.Add([]byte(seed))
	}
	f.Add([]byte("{\"a\":\"\xed\xa0\x80\",\"b\":\"\xef\xbf\xbd\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkParseObject(t, data)
	})
}

// BenchmarkParseObject compares the fast path with encoding/json on an
// account body.
func BenchmarkParseObject(b *testing.B) {
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := parseObject(accountJSON); !ok {
				b.Fatal("refused")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeJSON(accountJSON); err != nil {
				b.Fatal(err)
			}
		}
	})
}
