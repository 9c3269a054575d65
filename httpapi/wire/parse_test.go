package wire

import (
	"reflect"
	"strings"
	"testing"
)

// parseSeeds are valid objects in the forms the fast path must take, with
// the escapes, numbers and nesting encoding/json is compared on.
var parseSeeds = []string{
	`{}`, ` { } `, "\t{\r\n\"a\" :\t1 }\n",
	`{"id":null,"enabled":1,"login":"anna","provider":"7","pin_md5":"0cc175b9c0f1b6a831c399e269772661","created":"2026-01-01T00:00:00+0000","provider_dto":null}`,
	`{"n":[0,-0,12,-3.25,1e9,1E+2,2.5e-3,-0.0e-5,9223372036854775808,1e99999999999999999999]}`,
	`{"t":true,"f":false,"z":null,"e":"","a":[],"o":{},"aa":[[],{}],"deep":{"a":{"b":[{"c":[1,[2,[3]]]}]}}}`,
	`{"esc":"q\" b\\ s\/ \b\f\n\r\t end","u":"\u0041\u00e9\u20AC\u0000","pair":"\ud83d\ude00","hi":"\uD83D\uDE00","bs":"\\ud800"}`,
	`{"name":"Анна Пример","emoji":"😀","mixed":"a\u0431é\n"}`,
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
	case !ok && err == nil && ref != nil && validText(data) && depth(ref) <= maxParseDepth && !hasDuplicate(data):
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
		`{"lone":"\ud800 x"}`, `{"low":"\udc00"}`, `{"half":"\ud83d\u0041"}`, `{"end":"\ud83d"}`,
		// A repeated member: encoding/json would let the last win; the
		// fast path leaves it to DecodeObject's fallback, which refuses it.
		`{"dup":1,"dup":"2","nested":{"dup":[1],"dup":null}}`,
	} {
		if _, ok := parseObject([]byte(bad)); ok {
			t.Errorf("fast path takes %q", bad)
		}
		checkParseObject(t, []byte(bad))
	}
}

// TestDecodeObjectFallback: what the fast path leaves to encoding/json is
// decoded as before (deep nesting followed) or, if it is not valid text,
// refused naming the field.
func TestDecodeObjectFallback(t *testing.T) {
	_, err := DecodeObject([]byte("{\"a\":\"x\xffy\"}"), DecodeOptions{})
	if fe, ok := err.(FieldErrors); !ok || fe["a"] != MsgText || len(fe) != 1 {
		t.Errorf("invalid UTF-8: %v, want a: %s", err, MsgText)
	}
	deep := `{"a":` + strings.Repeat(`[`, 100) + strings.Repeat(`]`, 100) + `}`
	if o, err := DecodeObject([]byte(deep), DecodeOptions{}); err != nil || !o.Has("a") {
		t.Errorf("deep body: %v", err)
	}
}

// Strings that decoders would have rewritten to U+FFFD (so that logins
// sent as the bytes ff 78 and fe 78 collided) are refused, naming the
// field as the getters do; real U+FFFD, escaped backslashes and surrogate
// pairs pass.
func TestDecodeObjectRefusesInvalidText(t *testing.T) {
	deep := strings.Repeat(`[`, 70) + "\"\xff\"" + strings.Repeat(`]`, 70)
	for body, field := range map[string]string{
		"{\"login\":\"\xffx\"}":     "login",
		"{\"login\":\"\xfex\"}":     "login",
		`{"login":"\ud800x"}`:       "login",
		`{"login":"x\udc00"}`:       "login",
		`{"login":"\ud83d"}`:        "login",
		`{"login":"\ud83d\\ude00"}`: "login",
		"{\"device\":{\"class\":\"tv\",\"unique_id\":\"\xfe\"}}": "device.unique_id",
		"{\"commands\":[{\"x\":1},{\"type\":\"a\xffb\"}]}":       "commands[1].type",
		"{\"ids\":[1,\"2\",\"\xc0\"]}":                           "ids[2]",
		"{\"a\":{},\"b\":[[],{},\"ok\",\"\xff\"]}":               "b[3]",
		"{\"\xffx\":1}":               "\ufffdx",
		`{"billing":{"\ud800":null}}`: "billing.\ufffd",
		`{"a":` + deep + `}`:          "a" + strings.Repeat("[0]", 70),
		// A key that is empty or reads as a path is named quoted.
		"{\"\":\"\xff\"}":        `""`,
		"{\"\":{\"\":\"\xff\"}}": `"".""`,
		"{\"a.b\":[\"\xff\"]}":   `"a.b"[0]`,
	} {
		_, err := DecodeObject([]byte(body), DecodeOptions{})
		fe, ok := err.(FieldErrors)
		if !ok || len(fe) != 1 || fe[field] != MsgText {
			t.Errorf("DecodeObject(%q) = %v, want %s: %s", body, err, field, MsgText)
		}
	}
	for _, body := range []string{
		`{"login":"\ufffdx"}`, "{\"login\":\"\xef\xbf\xbdx\"}", `{"login":"\\ud800"}`, `{"login":"\ud83d\ude00"}`,
		`{"login":"Анна 😀"}`,
	} {
		if _, err := DecodeObject([]byte(body), DecodeOptions{}); err != nil {
			t.Errorf("DecodeObject(%q) = %v, want it taken", body, err)
		}
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

// hasDuplicate reports whether data repeats a member of one of its objects:
// the fast path leaves those to the fallback, which refuses them.
func hasDuplicate(data []byte) bool {
	_, found := duplicateMember(data)
	return found
}
