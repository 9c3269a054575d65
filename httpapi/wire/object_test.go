package wire

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// getterCase is one field value fed to one getter: want is the Optional it
// must return, or msg the error it must record.
type getterCase[T any] struct {
	json string // the field's JSON value; "" means absent
	want Optional[T]
	msg  string
}

// runGetter decodes {"f": <json>} and calls get on field "f" for each case.
func runGetter[T any](t *testing.T, name string, get func(*Object, string) Optional[T], cases []getterCase[T]) {
	t.Helper()
	for _, tc := range cases {
		body := `{}`
		if tc.json != "" {
			body = `{"f":` + tc.json + `}`
		}
		o, err := DecodeObject([]byte(body), DecodeOptions{})
		if err != nil {
			t.Errorf("%s: DecodeObject(%s): %v", name, body, err)
			continue
		}
		got := get(o, "f")
		var fe FieldErrors
		errors.As(o.Err(), &fe)
		switch {
		case tc.msg != "":
			if fe["f"] != tc.msg {
				t.Errorf("%s(%s): error %q, want %q", name, tc.json, fe["f"], tc.msg)
			}
			if got.Present || got.Null {
				t.Errorf("%s(%s) = %+v after an error, want absent", name, tc.json, got)
			}
		case fe != nil:
			t.Errorf("%s(%s): unexpected error %v", name, tc.json, fe)
		case !reflect.DeepEqual(got, tc.want):
			t.Errorf("%s(%s) = %+v, want %+v", name, tc.json, got, tc.want)
		}
		if tc.json != "" && len(o.Unknown()) != 0 {
			t.Errorf("%s(%s): field still unknown after reading it: %v", name, tc.json, o.Unknown())
		}
	}
}

func TestInt64(t *testing.T) {
	absent := Optional[int64]{}
	cases := []getterCase[int64]{
		{json: "", want: absent},
		{json: "null", want: absent},
		{json: `""`, want: absent},
		{json: `"  "`, want: absent},
		{json: "0", want: Some[int64](0)},
		{json: "-0", want: Some[int64](0)},
		{json: "42", want: Some[int64](42)},
		{json: "-42", want: Some[int64](-42)},
		{json: "42.0", want: Some[int64](42)},
		{json: "42.000", want: Some[int64](42)},
		{json: "4.2e1", want: Some[int64](42)},
		{json: "4.2E+1", want: Some[int64](42)},
		{json: "4200e-2", want: Some[int64](42)},
		{json: "0.0e99999999999999999999", want: Some[int64](0)},
		{json: "9223372036854775807", want: Some[int64](9223372036854775807)},
		{json: "-9223372036854775808", want: Some[int64](-9223372036854775808)},
		{json: "9007199254740993", want: Some[int64](9007199254740993)}, // 2^53+1: float64 would lose it
		{json: "9.007199254740993e15", want: Some[int64](9007199254740993)},
		{json: "-9.223372036854775808e18", want: Some[int64](-9223372036854775808)},
		{json: `"42"`, want: Some[int64](42)},
		{json: `" 42 "`, want: Some[int64](42)},
		{json: `"+42"`, want: Some[int64](42)},
		{json: `"-42"`, want: Some[int64](-42)},
		{json: `"007"`, want: Some[int64](7)},
		{json: "42.5", msg: MsgInt},
		{json: "0.1", msg: MsgInt},
		{json: "1e-1", msg: MsgInt},
		{json: "1e-99999999999999999999", msg: MsgInt},
		{json: "9223372036854775808", msg: MsgIntRange},
		{json: "-9223372036854775809", msg: MsgIntRange},
		{json: "1e19", msg: MsgIntRange},
		{json: "1e99999999999999999999", msg: MsgIntRange},
		{json: "123456789012345678901234567890", msg: MsgIntRange},
		{json: `"9223372036854775808"`, msg: MsgIntRange},
		{json: `"42.0"`, msg: MsgInt},
		{json: `"4e1"`, msg: MsgInt},
		{json: `"0x2a"`, msg: MsgInt},
		{json: `"NaN"`, msg: MsgInt},
		{json: `"Infinity"`, msg: MsgInt},
		{json: `"-Inf"`, msg: MsgInt},
		{json: `"42abc"`, msg: MsgInt},
		{json: `"-"`, msg: MsgInt},
		{json: `"4 2"`, msg: MsgInt},
		{json: "true", msg: MsgInt},
		{json: "[1]", msg: MsgInt},
		{json: `{"v":1}`, msg: MsgInt},
	}
	runGetter(t, "Int64", (*Object).Int64, cases)

	nullable := []getterCase[int64]{
		{json: "", want: absent},
		{json: "null", want: Null[int64]()},
		{json: `""`, want: Null[int64]()},
		{json: "5", want: Some[int64](5)},
		{json: `"5"`, want: Some[int64](5)},
		{json: `"five"`, msg: MsgInt},
		{json: "5.5", msg: MsgInt},
		{json: "1e30", msg: MsgIntRange},
	}
	runGetter(t, "NullableInt64", (*Object).NullableInt64, nullable)
}

func TestBool(t *testing.T) {
	cases := []getterCase[bool]{
		{json: "", want: Optional[bool]{}},
		{json: "null", want: Optional[bool]{}},
		{json: `""`, want: Optional[bool]{}},
		{json: "true", want: Some(true)},
		{json: "false", want: Some(false)},
		{json: "1", want: Some(true)},
		{json: "0", want: Some(false)},
		{json: "1.0", want: Some(true)},
		{json: `"1"`, want: Some(true)},
		{json: `"0"`, want: Some(false)},
		{json: `"true"`, want: Some(true)},
		{json: `"FALSE"`, want: Some(false)},
		{json: `" True "`, want: Some(true)},
		{json: "2", msg: MsgBool},
		{json: "-1", msg: MsgBool},
		{json: "0.5", msg: MsgBool},
		{json: `"yes"`, msg: MsgBool},
		{json: `"2"`, msg: MsgBool},
		{json: `"t"`, msg: MsgBool},
		{json: "[]", msg: MsgBool},
	}
	runGetter(t, "Bool", (*Object).Bool, cases)
}

func TestString(t *testing.T) {
	cases := []getterCase[string]{
		{json: "", want: Optional[string]{}},
		{json: "null", want: Optional[string]{}},
		{json: `""`, want: Some("")},
		{json: `"anna"`, want: Some("anna")},
		{json: `" anna "`, want: Some(" anna ")}, // strings are not trimmed
		{json: `"\u00e9t\u00e9"`, want: Some("été")},
		{json: "12345", want: Some("12345")}, // a numeric login sent unquoted
		{json: "1.50", want: Some("1.50")},   // its literal text, not a float
		{json: "true", msg: MsgString},
		{json: `["a"]`, msg: MsgString},
		{json: `{}`, msg: MsgString},
	}
	runGetter(t, "String", (*Object).String, cases)

	nullable := []getterCase[string]{
		{json: "", want: Optional[string]{}},
		{json: "null", want: Null[string]()},
		{json: `""`, want: Some("")},
		{json: `"contract 7"`, want: Some("contract 7")},
		{json: "false", msg: MsgString},
	}
	runGetter(t, "NullableString", (*Object).NullableString, nullable)
}

func TestDateTimeGetters(t *testing.T) {
	at := time.Date(2026, 11, 22, 17, 59, 41, 0, time.UTC)
	cases := []getterCase[time.Time]{
		{json: "", want: Optional[time.Time]{}},
		{json: "null", want: Optional[time.Time]{}},
		{json: `""`, want: Optional[time.Time]{}},
		{json: `"2026-11-22T17:59:41+0000"`, want: Some(at)},
		{json: `"2026-11-22T20:59:41+0300"`, want: Some(at)},
		{json: `"2026-11-22T20:59:41+03:00"`, want: Some(at)},
		{json: `"2026-11-22T17:59:41Z"`, want: Some(at)},
		{json: `"2026-11-22T17:59:41.123Z"`, want: Some(at)},
		{json: `" 2026-11-22T17:59:41Z "`, want: Some(at)},
		{json: `"2026-11-22"`, msg: ErrDateTime.Error()},
		{json: `"2026-11-22T17:59:41"`, msg: ErrDateTime.Error()},
		{json: `"22.11.2026 17:59"`, msg: ErrDateTime.Error()},
		{json: `"2026-02-30T00:00:00Z"`, msg: ErrInvalidDate.Error()},
		{json: `"0000-01-01T00:00:00Z"`, msg: ErrYearRange.Error()},
		{json: "1764000000", msg: ErrDateTime.Error()},
		{json: "true", msg: ErrDateTime.Error()},
	}
	runGetter(t, "DateTime", (*Object).DateTime, cases)
	if ErrDateTime.Error() != "must be a date-time like 2026-11-22T17:59:41+0000" {
		t.Errorf("message changed: %q", ErrDateTime)
	}

	nullable := []getterCase[time.Time]{
		{json: "", want: Optional[time.Time]{}},
		{json: "null", want: Null[time.Time]()},
		{json: `""`, want: Null[time.Time]()},
		{json: `"2026-11-22T17:59:41+0000"`, want: Some(at)},
		{json: `"tomorrow"`, msg: ErrDateTime.Error()},
	}
	runGetter(t, "NullableDateTime", (*Object).NullableDateTime, nullable)

	post := []getterCase[time.Time]{
		{json: "", want: Optional[time.Time]{}},
		{json: "null", want: Optional[time.Time]{}},
		{json: `"2026-11-22T17:59:41"`, want: Some(at)},
		{json: `"2026-11-22T20:59:41+0300"`, want: Some(at)},
		{json: `"2026-11-22"`, msg: ErrPostTime.Error()},
		{json: "5", msg: ErrPostTime.Error()},
	}
	runGetter(t, "PostTime", (*Object).PostTime, post)
}

func TestInt64List(t *testing.T) {
	cases := []getterCase[[]int64]{
		{json: "", want: Optional[[]int64]{}},
		{json: "null", want: Optional[[]int64]{}},
		{json: "[]", want: Some([]int64{})},
		{json: "[1,2,3]", want: Some([]int64{1, 2, 3})},
		{json: `[1,"2",3.0]`, want: Some([]int64{1, 2, 3})},
		{json: "[1,2.5]", msg: "element 1 " + MsgInt},
		{json: "[1,null]", msg: "element 1 " + MsgInt},
		{json: `["", 1]`, msg: "element 0 " + MsgInt},
		{json: "[1e40]", msg: "element 0 " + MsgIntRange},
		{json: "1", msg: MsgIntList},
		{json: `"1,2"`, msg: MsgIntList},
		{json: `{"0":1}`, msg: MsgIntList},
	}
	runGetter(t, "Int64List", (*Object).Int64List, cases)
}

func TestNestedObjects(t *testing.T) {
	o, err := DecodeObject([]byte(`{
		"billing": {"resolve": 1, "url": "https://billing.example", "token": 5, "extra": true},
		"commands": [{"command": "user_message", "ttl": "x"}, {"command": 7, "delay": "10"}],
		"bad_obj": [1], "bad_list": [{}, 2]
	}`), DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	billing := o.Object("billing")
	if !billing.HasValue() {
		t.Fatal("billing missing")
	}
	b := billing.Value
	if got := b.Bool("resolve"); got != Some(true) {
		t.Errorf("billing.resolve = %+v", got)
	}
	if got := b.String("token"); got != Some("5") {
		t.Errorf("billing.token = %+v", got)
	}
	b.String("url")
	if got := b.Unknown(); !reflect.DeepEqual(got, []string{"extra"}) {
		t.Errorf("billing unknown = %v", got)
	}

	cmds := o.ObjectList("commands")
	if len(cmds.Value) != 2 {
		t.Fatalf("commands = %+v", cmds)
	}
	cmds.Value[0].Int64("ttl")
	cmds.Value[1].String("command")
	if got := cmds.Value[1].Int64("delay"); got != Some[int64](10) {
		t.Errorf("delay = %+v", got)
	}
	cmds.Value[1].Fail("channel", MsgRequired)
	o.Object("bad_obj")
	o.ObjectList("bad_list")
	o.Object("missing")

	want := FieldErrors{
		"commands[0].ttl":     MsgInt,
		"commands[1].channel": MsgRequired,
		"bad_obj":             MsgObject,
		"bad_list":            "element 1 " + MsgObject,
	}
	if err := o.Err(); !reflect.DeepEqual(err, want) {
		t.Errorf("Err = %#v, want %#v", err, want)
	}
	if got := o.Err().Error(); got != "bad_list: element 1 must be an object; bad_obj: must be an object; commands[0].ttl: must be an integer; commands[1].channel: required" {
		t.Errorf("Err text = %q", got)
	}
}

func TestReadOnlyAndUnknown(t *testing.T) {
	body := []byte(`{"id":null,"login":"anna","created":"2026-01-01T00:00:00+0000","last_online":null,
		"provider_dto":{"id":1},"region_dto":null,"colour":"red","pin_md5":null}`)

	o, err := DecodeObject(body, DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := o.Ignored(); !reflect.DeepEqual(got, []string{"created", "last_online", "provider_dto", "region_dto"}) {
		t.Errorf("Ignored = %v", got)
	}
	if o.Has("created") || o.String("created").Present {
		t.Error("a read-only field is visible")
	}
	if id := o.Int64("id"); id.Present {
		t.Errorf("id:null = %+v, want absent (a create)", id)
	}
	o.String("login")
	if got := o.String("pin_md5"); got.Present {
		t.Errorf("pin_md5:null = %+v, want absent (unchanged)", got)
	}
	if got := o.Unknown(); !reflect.DeepEqual(got, []string{"colour"}) {
		t.Errorf("Unknown = %v", got)
	}
	if o.Err() != nil {
		t.Errorf("Err = %v", o.Err())
	}

	custom, err := DecodeObject(body, DecodeOptions{ReadOnly: []string{"id", "colour", "last_*"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := custom.Ignored(); !reflect.DeepEqual(got, []string{"colour", "id", "last_online"}) {
		t.Errorf("custom Ignored = %v", got)
	}
	none, _ := DecodeObject(body, DecodeOptions{ReadOnly: []string{}})
	if len(none.Ignored()) != 0 || !none.Has("created") {
		t.Errorf("empty ReadOnly dropped %v", none.Ignored())
	}
}

func TestRequire(t *testing.T) {
	o, err := DecodeObject([]byte(`{"login":"","fullname":"  ","pin_md5":null,"provider":"x","enabled":0}`), DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o.Int64("provider") // a type error wins over "required"
	o.Require("login", "fullname", "pin_md5", "provider", "enabled", "absent")
	want := FieldErrors{"login": MsgRequired, "fullname": MsgRequired, "pin_md5": MsgRequired, "absent": MsgRequired, "provider": MsgInt}
	if err := o.Err(); !reflect.DeepEqual(err, want) {
		t.Errorf("Err = %v, want %v", err, want)
	}
}

func TestDecodeObjectErrors(t *testing.T) {
	for _, tc := range []struct {
		body string
		want string
	}{
		{"", "request body: empty; want a JSON object"},
		{" \n\t", "request body: empty; want a JSON object"},
		{"[]", "request body: must be a JSON object"},
		{`"x"`, "request body: must be a JSON object"},
		{"null", "request body: must be a JSON object"},
		{"42", "request body: must be a JSON object"},
		{"nul", "request body: must be a JSON object"},
		{"<xml/>", "request body: must be a JSON object"},
		{"{", "request body: invalid JSON: unexpected end of input"},
		{`{"a":1,}`, "request body: invalid JSON: invalid character '}' looking for beginning of object key string (at byte 8)"},
		{`{"a":01}`, "request body: invalid JSON: invalid character '1' after object key:value pair (at byte 7)"},
		{`{"a":NaN}`, "request body: invalid JSON: invalid character 'N' looking for beginning of value (at byte 6)"},
		{`{"a":1} {"b":2}`, "request body: invalid JSON: data after the object"},
		{`{"a":1}]`, "request body: invalid JSON: data after the object"},
		{`{'a':1}`, "request body: invalid JSON: invalid character '\\'' looking for beginning of object key string (at byte 2)"},
	} {
		_, err := DecodeObject([]byte(tc.body), DecodeOptions{})
		var be *BodyError
		if !errors.As(err, &be) || err.Error() != tc.want {
			t.Errorf("DecodeObject(%q) = %v, want BodyError %q", tc.body, err, tc.want)
		}
	}
	// Whitespace around the object is fine.
	if _, err := DecodeObject([]byte("\n {\"a\":1} \n"), DecodeOptions{}); err != nil {
		t.Errorf("whitespace: %v", err)
	}
}

func TestSizeLimit(t *testing.T) {
	body := `{"login":"` + strings.Repeat("a", 100) + `"}` // 112 bytes
	var tl *TooLargeError
	if _, err := DecodeObject([]byte(body), DecodeOptions{MaxBytes: 111}); !errors.As(err, &tl) || tl.Limit != 111 {
		t.Errorf("DecodeObject over the limit: %v", err)
	}
	if _, err := DecodeObject([]byte(body), DecodeOptions{MaxBytes: 112}); err != nil {
		t.Errorf("DecodeObject at the limit: %v", err)
	}
	if _, err := ReadObject(strings.NewReader(body), DecodeOptions{MaxBytes: 111}); !errors.As(err, &tl) {
		t.Errorf("ReadObject over the limit: %v", err)
	}
	if _, err := ReadObject(iotest.HalfReader(strings.NewReader(body)), DecodeOptions{MaxBytes: 112}); err != nil {
		t.Errorf("ReadObject at the limit: %v", err)
	}
	big := `{"a":"` + strings.Repeat("x", DefaultMaxBytes) + `"}`
	if _, err := ReadObject(strings.NewReader(big), DecodeOptions{}); !errors.As(err, &tl) || tl.Limit != DefaultMaxBytes {
		t.Errorf("ReadObject over the default limit: %v", err)
	}
	readErr := errors.New("connection reset")
	if _, err := ReadObject(iotest.ErrReader(readErr), DecodeOptions{}); !errors.Is(err, readErr) {
		t.Errorf("ReadObject read error: %v", err)
	}
}

func TestParseIntAndBool(t *testing.T) {
	if n, err := ParseInt(" -12 "); err != nil || n != -12 {
		t.Errorf("ParseInt = %d, %v", n, err)
	}
	for in, want := range map[string]string{"": MsgInt, "1.5": MsgInt, "abc": MsgInt, "99999999999999999999": MsgIntRange} {
		if _, err := ParseInt(in); err == nil || err.Error() != want {
			t.Errorf("ParseInt(%q) error %v, want %q", in, err, want)
		}
	}
	if b, err := ParseBool("1"); err != nil || !b {
		t.Errorf("ParseBool(1) = %v, %v", b, err)
	}
	if _, err := ParseBool("maybe"); err == nil || err.Error() != MsgBool {
		t.Errorf("ParseBool(maybe) error %v", err)
	}
}

func TestOptional(t *testing.T) {
	if v := Some(3).Or(7); v != 3 {
		t.Errorf("Some.Or = %d", v)
	}
	if v := Null[int]().Or(7); v != 7 {
		t.Errorf("Null.Or = %d", v)
	}
	if p := Some(3).Ptr(); p == nil || *p != 3 {
		t.Errorf("Some.Ptr = %v", p)
	}
	if p := (Optional[int]{}).Ptr(); p != nil {
		t.Errorf("absent Ptr = %v", p)
	}
	if Null[int]().HasValue() || (Optional[int]{}).HasValue() || !Some(0).HasValue() {
		t.Error("HasValue is wrong")
	}
}
