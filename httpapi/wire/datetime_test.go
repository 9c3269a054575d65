package wire

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
	_ "time/tzdata"
)

func TestParseDateTime(t *testing.T) {
	utc := func(y int, mo time.Month, d, h, mi, s int) time.Time {
		return time.Date(y, mo, d, h, mi, s, 0, time.UTC)
	}
	want := utc(2026, 11, 22, 17, 59, 41)
	good := []struct {
		in   string
		want time.Time
	}{
		{"2026-11-22T17:59:41+0000", want},
		{"2026-11-22T17:59:41-0000", want},
		{"2026-11-22T20:59:41+0300", want},
		{"2026-11-22T20:59:41+03:00", want},
		{"2026-11-22T14:29:41-03:30", want},
		{"2026-11-22T14:29:41-0330", want},
		{"2026-11-22T17:59:41Z", want},
		{"2026-11-22T17:59:41.9Z", want},             // truncated, not rounded
		{"2026-11-22T17:59:41.123456789+0000", want}, // nanoseconds
		{"2026-11-22T20:59:41.5+03:00", want},        // fraction and colon offset
		{"2026-11-23T01:00:00+0800", utc(2026, 11, 22, 17, 0, 0)},
		{"2024-02-29T00:00:00Z", utc(2024, 2, 29, 0, 0, 0)}, // leap day
		{"2026-01-01T00:30:00+0100", utc(2025, 12, 31, 23, 30, 0)},
		{"0001-01-01T00:00:00Z", utc(1, 1, 1, 0, 0, 0)},
		{"9999-12-31T23:59:59Z", utc(9999, 12, 31, 23, 59, 59)},
	}
	for _, tc := range good {
		got, err := ParseDateTime(tc.in)
		if err != nil {
			t.Errorf("ParseDateTime(%q): %v", tc.in, err)
			continue
		}
		if !got.Equal(tc.want) || got.Location() != time.UTC {
			t.Errorf("ParseDateTime(%q) = %v, want %v in UTC", tc.in, got, tc.want)
		}
	}

	bad := []struct {
		in   string
		want error
	}{
		{"", ErrDateTime},
		{"2026-11-22", ErrDateTime},
		{"2026-11-22T17:59:41", ErrDateTime}, // no zone: ambiguous
		{"2026-11-22 17:59:41+0000", ErrDateTime},
		{"2026-11-22t17:59:41Z", ErrDateTime},
		{"2026-11-22T17:59:41z", ErrDateTime},
		{"2026-11-22T17:59+0000", ErrDateTime},
		{"2026-11-22T17:59:41+03", ErrDateTime},
		{"2026-11-22T17:59:41+3:00", ErrDateTime},
		{"2026-11-22T17:59:41+03:0", ErrDateTime},
		{"2026-11-22T17:59:41+030", ErrDateTime},
		{"2026-11-22T17:59:41+03000", ErrDateTime},
		{"2026-11-22T17:59:41 +0000", ErrDateTime},
		{"2026-11-22T17:59:41+0000 ", ErrDateTime},
		{"2026-11-22T17:59:41.Z", ErrDateTime},
		{"2026-11-22T17:59:41.1234567890Z", ErrDateTime}, // 10 fraction digits
		{"2026-11-22T17:59:41,5Z", ErrDateTime},
		{"2026-11-22T24:00:00Z", ErrDateTime},
		{"2026-11-22T23:60:00Z", ErrDateTime},
		{"2026-11-22T23:59:60Z", ErrDateTime}, // leap seconds are not written by anyone we know
		{"2026-11-22T17:59:41+2400", ErrDateTime},
		{"2026-11-22T17:59:41+0060", ErrDateTime},
		{"2026-13-01T00:00:00Z", ErrInvalidDate},
		{"2026-00-01T00:00:00Z", ErrInvalidDate},
		{"2026-02-29T00:00:00Z", ErrInvalidDate},
		{"2026-04-31T00:00:00Z", ErrInvalidDate},
		{"2026-11-00T00:00:00Z", ErrInvalidDate},
		{"0000-01-01T00:00:00Z", ErrYearRange},
		{"0001-01-01T00:00:00+0100", ErrYearRange}, // year 0 in UTC
		{"9999-12-31T23:59:59-0100", ErrYearRange}, // year 10000 in UTC
		{"-001-01-01T00:00:00Z", ErrDateTime},
		{"+2026-11-22T17:59:41Z", ErrDateTime},
		{"２０２６-11-22T17:59:41Z", ErrDateTime},
		{"2026-11-22T17:59:41.+0000", ErrDateTime},
		{"1764E+6", ErrDateTime},
		{"NaN", ErrDateTime},
	}
	for _, tc := range bad {
		if got, err := ParseDateTime(tc.in); !errors.Is(err, tc.want) {
			t.Errorf("ParseDateTime(%q) = %v, %v; want error %v", tc.in, got, err, tc.want)
		}
	}
}

func TestFormatDateTime(t *testing.T) {
	at := time.Date(2026, 11, 22, 17, 59, 41, 999_999_999, time.UTC)
	berlin, err := time.LoadLocation("Europe/Berlin") // time/tzdata is linked in: never missing
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		t    time.Time
		want string
	}{
		{at, "2026-11-22T17:59:41+0000"},
		{at.In(time.Local), "2026-11-22T17:59:41+0000"}, // the host zone never leaks
		{at.In(berlin), "2026-11-22T18:59:41+0100"},
		{at.In(time.FixedZone("", -(3*3600 + 30*60))), "2026-11-22T14:29:41-0330"},
	} {
		if got := FormatDateTime(tc.t); got != tc.want {
			t.Errorf("FormatDateTime(%v) = %q, want %q", tc.t, got, tc.want)
		}
	}
	if got := NewDateTime(at, berlin).String(); got != "2026-11-22T18:59:41+0100" {
		t.Errorf("NewDateTime in Berlin = %q", got)
	}
	if got := NewDateTime(at.In(berlin), nil).String(); got != "2026-11-22T17:59:41+0000" {
		t.Errorf("NewDateTime with nil location = %q, want UTC", got)
	}
	if !NewDateTime(time.Time{}, berlin).IsZero() {
		t.Error("NewDateTime of the zero time is not zero")
	}
}

func TestDateTimeJSON(t *testing.T) {
	type sub struct {
		Start DateTime  `json:"start"`
		Stop  DateTime  `json:"stop"`
		End   *DateTime `json:"end"`
	}
	in := sub{Start: NewDateTime(time.Date(2026, 11, 22, 17, 59, 41, 0, time.UTC), nil)}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"start":"2026-11-22T17:59:41+0000","stop":null,"end":null}`; string(b) != want {
		t.Fatalf("Marshal = %s, want %s", b, want)
	}

	var out sub
	if err := json.Unmarshal([]byte(`{"start":"2026-11-22T20:59:41+03:00","stop":null,"end":"2026-11-22T17:59:41Z"}`), &out); err != nil {
		t.Fatal(err)
	}
	if !out.Start.Equal(in.Start.Time) || !out.Stop.IsZero() || out.End == nil || !out.End.Equal(in.Start.Time) {
		t.Fatalf("Unmarshal = %+v", out)
	}
	for _, bad := range []string{`{"start":"2026-11-22"}`, `{"start":1764000000}`, `{"start":true}`} {
		if err := json.Unmarshal([]byte(bad), &out); err == nil {
			t.Errorf("Unmarshal(%s) succeeded", bad)
		}
	}

	var escaped DateTime // a JSON escape is still a date-time
	if err := json.Unmarshal([]byte(`"2026-11-22T17:59:41\u002B0000"`), &escaped); err != nil || !escaped.Equal(in.Start.Time) {
		t.Errorf("escaped: %v, %v", escaped, err)
	}

	text, _ := in.Start.MarshalText()
	var back DateTime
	if err := back.UnmarshalText(text); err != nil || !back.Equal(in.Start.Time) {
		t.Errorf("text round trip: %s → %v, %v", text, back, err)
	}
	if text, _ := (DateTime{}).MarshalText(); len(text) != 0 {
		t.Errorf("zero MarshalText = %q", text)
	}
}

func TestPostTime(t *testing.T) {
	want := time.Date(2026, 11, 22, 17, 59, 41, 0, time.UTC)
	for _, in := range []string{"2026-11-22T17:59:41", "2026-11-22T17:59:41.250", "2026-11-22T17:59:41Z", "2026-11-22T20:59:41+0300", "2026-11-22T20:59:41+03:00"} {
		got, err := ParsePostTime(in)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParsePostTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "2026-11-22", "2026-11-22 17:59:41", "1764000000", "2026-11-22T17:59", "2026-02-30T00:00:00"} {
		if _, err := ParsePostTime(in); err == nil {
			t.Errorf("ParsePostTime(%q) succeeded", in)
		}
	}
	b, _ := json.Marshal(struct {
		A PostTime `json:"a"`
		B PostTime `json:"b"`
	}{A: PostTime{want.In(time.FixedZone("", 3600))}})
	if string(b) != `{"a":"2026-11-22T17:59:41","b":null}` {
		t.Errorf("Marshal = %s", b)
	}
	var p PostTime
	if err := json.Unmarshal([]byte(`"2026-11-22T17:59:41"`), &p); err != nil || !p.Equal(want) {
		t.Errorf("Unmarshal = %v, %v", p, err)
	}
	if err := json.Unmarshal([]byte(`"2026-11-22"`), &p); !errors.Is(err, ErrPostTime) {
		t.Errorf("Unmarshal of a date: %v", err)
	}
}

func TestDate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Date
	}{
		{"2026-11-22", Date{2026, 11, 22}},
		{"2024-02-29", Date{2024, 2, 29}},
		{"0001-01-01", Date{1, 1, 1}},
		{"9999-12-31", Date{9999, 12, 31}},
	} {
		got, err := ParseDate(tc.in)
		if err != nil || got != tc.want || got.String() != tc.in {
			t.Errorf("ParseDate(%q) = %v (%s), %v", tc.in, got, got, err)
		}
	}
	for _, tc := range []struct {
		in   string
		want error
	}{
		{"", ErrDate}, {"2026-11-2", ErrDate}, {"2026-11-22T00:00:00Z", ErrDate}, {"2026/11/22", ErrDate},
		{"22-11-2026", ErrDate}, {" 2026-11-22", ErrDate}, {"2026-1-022", ErrDate}, {"+026-11-22", ErrDate},
		{"2026-02-29", ErrInvalidDate}, {"2026-13-01", ErrInvalidDate}, {"2026-11-31", ErrInvalidDate}, {"2026-00-10", ErrInvalidDate},
		{"0000-01-01", ErrYearRange},
	} {
		if got, err := ParseDate(tc.in); !errors.Is(err, tc.want) {
			t.Errorf("ParseDate(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}

	d := Date{2026, 12, 31}
	if got := d.AddDays(1); got != (Date{2027, 1, 1}) {
		t.Errorf("AddDays(1) = %v", got)
	}
	if got := d.AddDays(-365); got != (Date{2025, 12, 31}) {
		t.Errorf("AddDays(-365) = %v", got)
	}
	if !d.After(Date{2026, 12, 30}) || !d.Before(Date{2027, 1, 1}) || d.Compare(d) != 0 || (Date{2026, 1, 31}).Compare(Date{2026, 2, 1}) != -1 {
		t.Error("Compare is wrong")
	}
	berlin := time.FixedZone("CET", 3600)
	if got := d.Start(berlin); !got.Equal(time.Date(2026, 12, 30, 23, 0, 0, 0, time.UTC)) {
		t.Errorf("Start(CET) = %v", got)
	}
	if got := DateOf(time.Date(2026, 12, 31, 23, 30, 0, 0, time.UTC).In(berlin)); got != (Date{2027, 1, 1}) {
		t.Errorf("DateOf in CET = %v", got)
	}

	b, _ := json.Marshal(struct {
		From Date `json:"from"`
		To   Date `json:"to"`
	}{From: d})
	if string(b) != `{"from":"2026-12-31","to":null}` {
		t.Errorf("Marshal = %s", b)
	}
	var back Date
	if err := json.Unmarshal([]byte(`"2026-12-31"`), &back); err != nil || back != d {
		t.Errorf("Unmarshal = %v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`"2026-12-32"`), &back); !errors.Is(err, ErrInvalidDate) {
		t.Errorf("Unmarshal of a bad day: %v", err)
	}
	if err := back.UnmarshalText([]byte("2026-01-05")); err != nil || back != (Date{2026, 1, 5}) {
		t.Errorf("UnmarshalText = %v, %v", back, err)
	}
}
