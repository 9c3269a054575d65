package wire

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzDecodeObject feeds arbitrary bytes to the decoder: it may reject them,
// but must not panic, and on what it accepts no getter may panic. It
// refuses a field only for invalid text or a repeated member, and names
// every field it refuses.
func FuzzDecodeObject(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `[]`, `null`, `{"a":1} x`,
		`{"id":null,"enabled":1,"login":"anna","provider":"7","pin_md5":"0cc175b9c0f1b6a831c399e269772661","fullname":"Anna","created":"2026-01-01T00:00:00+0000","provider_dto":null,"devices_per_account_limit":"3"}`,
		`{"account":5,"tarif":2,"start":"2026-11-22T17:59:41+03:00","stop":null}`,
		`{"ids":[1,"2",3.0],"commands":[{"command":"user_message","post_time":"2026-11-22T17:59:41","ttl":1764000000}]}`,
		`{"billing":{"resolve":"true","url":"x","token":null}}`,
		`{"n":1e99999999999999999999,"m":-0.0e-5,"f":9223372036854775808,"s":"NaN"}`,
		`{"a":{"b":{"c":[{"d":[[]]}]}}}`,
		"{\"login\":\"\xffx\",\"device\":{\"unique_id\":\"\xfex\"}}", `{"a":["\ud800",{"\udc00":1}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := DecodeObject(data, DecodeOptions{MaxBytes: 1 << 16})
		var fe FieldErrors
		switch {
		case err == nil && !validText(data):
			t.Fatalf("took %q, which holds invalid text", data)
		case errors.As(err, &fe) && validText(data):
			if field, dup := duplicateMember(data); !dup || fe[field] != MsgDuplicate {
				t.Fatalf("refused %q, valid text without a repeated member: %v", data, err)
			}
		}
		for field := range fe {
			if field == "" || strings.HasPrefix(field, ".") {
				t.Fatalf("refused %q naming no field: %v", data, err)
			}
		}
		if err != nil {
			return
		}
		exercise(o, 0)
		_ = o.Unknown()
		_ = o.Ignored()
		if err := o.Err(); err != nil {
			_ = err.Error()
		}
	})
}

// exercise calls every getter on every field of o and of its nested objects.
func exercise(o *Object, depth int) {
	names := append(o.Unknown(), "missing")
	for _, name := range names {
		_ = o.Has(name)
		o.Int64(name)
		o.NullableInt64(name)
		o.Bool(name)
		o.String(name)
		o.NullableString(name)
		o.DateTime(name)
		o.NullableDateTime(name)
		o.PostTime(name)
		o.Int64List(name)
		o.Raw(name)
		o.Require(name)
		if depth < 8 {
			if sub := o.Object(name); sub.HasValue() {
				exercise(sub.Value, depth+1)
			}
			for _, sub := range o.ObjectList(name).Value {
				exercise(sub, depth+1)
			}
		}
	}
}

// FuzzParseDateTime: ParseDateTime never panics, and whatever it accepts is
// written back (in UTC and in other offsets) to a form it reads as the same
// instant.
func FuzzParseDateTime(f *testing.F) {
	for _, seed := range []string{
		"2026-11-22T17:59:41+0000", "2026-11-22T17:59:41+03:00", "2026-11-22T17:59:41Z",
		"2026-11-22T17:59:41.123456789-0130", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59+2359",
		"2024-02-29T12:00:00-23:59", "2026-11-22T17:59:41", "", "x",
	} {
		f.Add(seed)
	}
	zones := []*time.Location{time.UTC, time.FixedZone("", 14*3600), time.FixedZone("", -(9*3600 + 30*60))}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseDateTime(s)
		if err != nil {
			if _, perr := ParsePostTime(s); perr == nil && len(s) > 19 && s[19] != '.' {
				// A zoned form that ParsePostTime accepts must parse as a date-time too.
				t.Fatalf("ParsePostTime accepts %q but ParseDateTime does not: %v", s, err)
			}
			return
		}
		if got.Location() != time.UTC || got.Nanosecond() != 0 {
			t.Fatalf("ParseDateTime(%q) = %v: not whole seconds in UTC", s, got)
		}
		for _, loc := range zones {
			out := FormatDateTime(got.In(loc))
			if loc == time.UTC && (got.Year() < 1 || got.Year() > 9999) {
				t.Fatalf("ParseDateTime(%q) = %v: year out of range", s, got)
			}
			if y := got.In(loc).Year(); y < 1 || y > 9999 {
				continue // cannot be written in 4 digits in that zone
			}
			back, err := ParseDateTime(out)
			if err != nil || !back.Equal(got) {
				t.Fatalf("ParseDateTime(%q) = %v, written %q, read back %v, %v", s, got, out, back, err)
			}
		}
		post, err := ParsePostTime(FormatPostTime(got))
		if err != nil || !post.Equal(got) {
			t.Fatalf("post_time round trip of %v: %v, %v", got, post, err)
		}
	})
}

// FuzzParseDate: ParseDate never panics and accepts only the canonical form
// of the date it returns.
func FuzzParseDate(f *testing.F) {
	for _, seed := range []string{"2026-11-22", "2024-02-29", "2026-02-29", "0000-01-01", "9999-12-31", "", "2026-1-1"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDate(s)
		if err != nil {
			return
		}
		if d.String() != s {
			t.Fatalf("ParseDate(%q) = %v, written %q", s, d, d.String())
		}
		if got := DateOf(d.Start(nil)); got != d {
			t.Fatalf("DateOf(Start(%v)) = %v", d, got)
		}
		if d2 := d.AddDays(1).AddDays(-1); d2 != d {
			t.Fatalf("AddDays round trip of %v = %v", d, d2)
		}
	})
}
