package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"time"
)

// Layouts of the wire formats, in the time package's notation.
const (
	// DateTimeLayout is how date-times are written in the Provider API and
	// the billing interface: the offset has no colon.
	DateTimeLayout = "2006-01-02T15:04:05-0700"
	// DateLayout is the date of the Statistics API.
	DateLayout = "2006-01-02"
	// PostTimeLayout is a command's post_time: GMT, no offset.
	PostTimeLayout = "2006-01-02T15:04:05"
)

// The parse errors. Their texts are written to complete a field name in an
// error body ("start: must be a date-time like ...").
var (
	ErrDateTime    = errors.New("must be a date-time like 2026-11-22T17:59:41+0000")
	ErrDate        = errors.New("must be a date like 2026-11-22")
	ErrPostTime    = errors.New("must be a date-time like 2026-11-22T17:59:41 (GMT)")
	ErrInvalidDate = errors.New("is not a valid calendar date")
	ErrYearRange   = errors.New("is out of range (years 0001 to 9999)")
)

// ParseDateTime parses a date-time in any form integrations send:
//
//	2026-11-22T17:59:41+0000   the documented form
//	2026-11-22T17:59:41+03:00  RFC 3339 offset
//	2026-11-22T17:59:41Z       RFC 3339 UTC
//	2026-11-22T17:59:41.123Z   fractional seconds (1 to 9 digits) with any of the above
//
// The result is in UTC and truncated to whole seconds, the precision the
// API writes: a client that sends back what it read changes nothing.
func ParseDateTime(s string) (time.Time, error) {
	t, zoned, err := parseTimestamp(s)
	if err != nil {
		if err == errSyntax {
			err = ErrDateTime
		}
		return time.Time{}, err
	}
	if !zoned {
		return time.Time{}, ErrDateTime
	}
	return t, nil
}

// ParsePostTime parses a command's post_time: "2026-11-22T17:59:41" in GMT,
// optionally with fractional seconds. An explicit offset or Z, which some
// clients add, is honoured. The result is in UTC, truncated to seconds.
func ParsePostTime(s string) (time.Time, error) {
	t, _, err := parseTimestamp(s)
	if err == errSyntax {
		err = ErrPostTime
	}
	return t, err
}

// FormatDateTime writes t as 2026-11-22T17:59:41+0000 in t's location; a
// time in time.Local is written in UTC, so the host's zone never leaks into
// the output. Fractional seconds are dropped.
func FormatDateTime(t time.Time) string {
	return string(appendDateTime(nil, t))
}

func appendDateTime(b []byte, t time.Time) []byte {
	if t.Location() == time.Local {
		t = t.UTC()
	}
	return t.AppendFormat(b, DateTimeLayout)
}

// DateTime is a point in time on the wire, written as
// 2026-11-22T17:59:41+0000 and read in every form ParseDateTime accepts.
//
// The zero DateTime is written as null and null reads as the zero DateTime,
// so nullable fields such as a subscription's stop need no pointer. (The
// zero time is 0001-01-01T00:00:00Z, which .NET clients send for "no date":
// it reads as null too.) It is
// written in its Time's location (time.Local as UTC): build output values
// with NewDateTime to apply the configured output location.
type DateTime struct{ time.Time }

// NewDateTime returns t to be written in loc; a nil loc means UTC.
func NewDateTime(t time.Time, loc *time.Location) DateTime {
	if t.IsZero() {
		return DateTime{}
	}
	if loc == nil {
		loc = time.UTC
	}
	return DateTime{t.In(loc)}
}

// String returns the wire form, or "" for the zero DateTime.
func (d DateTime) String() string {
	if d.IsZero() {
		return ""
	}
	return FormatDateTime(d.Time)
}

// MarshalJSON writes the wire form in quotes, or null for the zero DateTime.
func (d DateTime) MarshalJSON() ([]byte, error) {
	if d.IsZero() {
		return []byte("null"), nil
	}
	b := make([]byte, 0, len(DateTimeLayout)+2)
	b = append(b, '"')
	b = appendDateTime(b, d.Time)
	return append(b, '"'), nil
}

// UnmarshalJSON reads a date-time string; null reads as the zero DateTime.
func (d *DateTime) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*d = DateTime{}
		return nil
	}
	s, ok := unquoteSimple(b)
	if !ok {
		return ErrDateTime
	}
	t, err := ParseDateTime(s)
	if err != nil {
		return err
	}
	*d = DateTime{t}
	return nil
}

// AppendText appends the wire form ("" for the zero DateTime). It overrides
// the promoted time.Time method so every encoder writes the same form.
func (d DateTime) AppendText(b []byte) ([]byte, error) {
	if d.IsZero() {
		return b, nil
	}
	return appendDateTime(b, d.Time), nil
}

// MarshalText returns the wire form ("" for the zero DateTime), for query
// parameters and text encoders.
func (d DateTime) MarshalText() ([]byte, error) { return d.AppendText(nil) }

// UnmarshalText reads a date-time; "" reads as the zero DateTime.
func (d *DateTime) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*d = DateTime{}
		return nil
	}
	t, err := ParseDateTime(string(b))
	if err != nil {
		return err
	}
	*d = DateTime{t}
	return nil
}

// PostTime is a command's post_time on the wire: 2026-11-22T17:59:41 in
// GMT. The zero PostTime is written as null (send now).
type PostTime struct{ time.Time }

// FormatPostTime writes t as a post_time: 2026-11-22T17:59:41 in UTC.
func FormatPostTime(t time.Time) string { return t.UTC().Format(PostTimeLayout) }

// String returns the wire form in UTC, or "" for the zero PostTime.
func (p PostTime) String() string {
	if p.IsZero() {
		return ""
	}
	return FormatPostTime(p.Time)
}

// MarshalJSON writes the wire form in quotes, or null for the zero PostTime.
func (p PostTime) MarshalJSON() ([]byte, error) {
	if p.IsZero() {
		return []byte("null"), nil
	}
	return strconv.AppendQuote(nil, p.String()), nil
}

// UnmarshalJSON reads a post_time; null reads as the zero PostTime.
func (p *PostTime) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*p = PostTime{}
		return nil
	}
	s, ok := unquoteSimple(b)
	if !ok {
		return ErrPostTime
	}
	t, err := ParsePostTime(s)
	if err != nil {
		return err
	}
	*p = PostTime{t}
	return nil
}

// AppendText appends the wire form ("" for the zero PostTime).
func (p PostTime) AppendText(b []byte) ([]byte, error) { return append(b, p.String()...), nil }

// MarshalText returns the wire form ("" for the zero PostTime).
func (p PostTime) MarshalText() ([]byte, error) { return p.AppendText(nil) }

// UnmarshalText reads a post_time; "" reads as the zero PostTime.
func (p *PostTime) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*p = PostTime{}
		return nil
	}
	t, err := ParsePostTime(string(b))
	if err != nil {
		return err
	}
	*p = PostTime{t}
	return nil
}

// Date is a calendar day, written 2026-11-22: the dates of the Statistics
// API. It is a plain value; compare dates with == or Compare. The zero Date
// is written as null.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// ParseDate parses exactly YYYY-MM-DD (years 0001 to 9999) and rejects days
// that do not exist (2026-02-30).
func ParseDate(s string) (Date, error) {
	if len(s) != len(DateLayout) {
		return Date{}, ErrDate
	}
	y, m, d, ok := parseYMD(s)
	if !ok {
		return Date{}, ErrDate
	}
	if err := checkYMD(y, m, d); err != nil {
		return Date{}, err
	}
	return Date{y, time.Month(m), d}, nil
}

// DateOf returns the day t falls on in t's location.
func DateOf(t time.Time) Date {
	y, m, d := t.Date()
	return Date{y, m, d}
}

// IsZero reports whether d is the zero Date.
func (d Date) IsZero() bool { return d == Date{} }

// Start returns the midnight that begins d in loc (nil means UTC).
func (d Date) Start(loc *time.Location) time.Time {
	if loc == nil {
		loc = time.UTC
	}
	return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, loc)
}

// AddDays returns the day n days after d (before it for negative n).
func (d Date) AddDays(n int) Date {
	return DateOf(time.Date(d.Year, d.Month, d.Day+n, 0, 0, 0, 0, time.UTC))
}

// Compare returns -1, 0 or +1 as d is before, equal to or after e.
func (d Date) Compare(e Date) int {
	switch {
	case d.Year != e.Year:
		return cmpInt(d.Year, e.Year)
	case d.Month != e.Month:
		return cmpInt(int(d.Month), int(e.Month))
	}
	return cmpInt(d.Day, e.Day)
}

// Before reports whether d is before e.
func (d Date) Before(e Date) bool { return d.Compare(e) < 0 }

// After reports whether d is after e.
func (d Date) After(e Date) bool { return d.Compare(e) > 0 }

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// String returns YYYY-MM-DD, the form ClickHouse binds dates in too.
func (d Date) String() string { return string(d.appendTo(nil)) }

func (d Date) appendTo(b []byte) []byte {
	b = appendDigits(b, d.Year, 4)
	b = append(b, '-')
	b = appendDigits(b, int(d.Month), 2)
	b = append(b, '-')
	return appendDigits(b, d.Day, 2)
}

// appendDigits appends v (non-negative) zero-padded to width digits.
func appendDigits(b []byte, v, width int) []byte {
	var buf [20]byte
	s := strconv.AppendInt(buf[:0], int64(v), 10)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// MarshalJSON writes "YYYY-MM-DD", or null for the zero Date.
func (d Date) MarshalJSON() ([]byte, error) {
	if d.IsZero() {
		return []byte("null"), nil
	}
	b := append(make([]byte, 0, 12), '"')
	b = d.appendTo(b)
	return append(b, '"'), nil
}

// UnmarshalJSON reads a date; null reads as the zero Date.
func (d *Date) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*d = Date{}
		return nil
	}
	s, ok := unquoteSimple(b)
	if !ok {
		return ErrDate
	}
	v, err := ParseDate(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalText returns YYYY-MM-DD ("" for the zero Date).
func (d Date) MarshalText() ([]byte, error) {
	if d.IsZero() {
		return nil, nil
	}
	return d.appendTo(nil), nil
}

// UnmarshalText reads a date; "" reads as the zero Date.
func (d *Date) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*d = Date{}
		return nil
	}
	v, err := ParseDate(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// errSyntax is replaced by the format error of the type being parsed.
var errSyntax = errors.New("syntax")

// parseTimestamp parses YYYY-MM-DDThh:mm:ss[.fraction][zone], zone being
// Z, ±hhmm or ±hh:mm. zoned reports whether a zone was given; without one the
// time is read as UTC. The result is in UTC, truncated to seconds, and its
// year (in UTC) is within 0001 to 9999 so that it can be written back.
func parseTimestamp(s string) (t time.Time, zoned bool, err error) {
	const base = len(PostTimeLayout) // 19
	if len(s) < base || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false, errSyntax
	}
	y, mo, d, ok := parseYMD(s[:10])
	if !ok {
		return time.Time{}, false, errSyntax
	}
	hh, ok1 := digits2(s, 11)
	mm, ok2 := digits2(s, 14)
	ss, ok3 := digits2(s, 17)
	if !ok1 || !ok2 || !ok3 {
		return time.Time{}, false, errSyntax
	}
	rest := s[base:]
	if len(rest) > 0 && rest[0] == '.' {
		n := 1
		for n < len(rest) && isDigit(rest[n]) {
			n++
		}
		if n == 1 || n > 10 { // 1 to 9 digits; dropped (truncation)
			return time.Time{}, false, errSyntax
		}
		rest = rest[n:]
	}
	offset := 0
	switch {
	case rest == "":
	case rest == "Z":
		zoned = true
	case len(rest) == 5 || (len(rest) == 6 && rest[3] == ':'):
		sign := 1
		switch rest[0] {
		case '+':
		case '-':
			sign = -1
		default:
			return time.Time{}, false, errSyntax
		}
		oh, ok1 := digits2(rest, 1)
		om, ok2 := digits2(rest, len(rest)-2)
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return time.Time{}, false, errSyntax
		}
		offset = sign * (oh*3600 + om*60)
		zoned = true
	default:
		return time.Time{}, false, errSyntax
	}
	if hh > 23 || mm > 59 || ss > 59 {
		return time.Time{}, false, errSyntax
	}
	if err := checkYMD(y, mo, d); err != nil {
		return time.Time{}, false, err
	}
	t = time.Date(y, time.Month(mo), d, hh, mm, ss, 0, time.UTC).Add(-time.Duration(offset) * time.Second)
	if uy := t.Year(); uy < 1 || uy > 9999 {
		return time.Time{}, false, ErrYearRange
	}
	return t, zoned, nil
}

// parseYMD reads YYYY-MM-DD from the first 10 bytes of s (syntax only).
func parseYMD(s string) (y, m, d int, ok bool) {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return 0, 0, 0, false
	}
	y1, ok1 := digits2(s, 0)
	y2, ok2 := digits2(s, 2)
	m, ok3 := digits2(s, 5)
	d, ok4 := digits2(s, 8)
	return y1*100 + y2, m, d, ok1 && ok2 && ok3 && ok4
}

// checkYMD rejects years outside 0001-9999 and days that do not exist.
func checkYMD(y, m, d int) error {
	if y < 1 {
		return ErrYearRange
	}
	if m < 1 || m > 12 || d < 1 || d > daysIn(time.Month(m), y) {
		return ErrInvalidDate
	}
	return nil
}

func daysIn(m time.Month, year int) int {
	return time.Date(year, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

func digits2(s string, i int) (int, bool) {
	if i+2 > len(s) || !isDigit(s[i]) || !isDigit(s[i+1]) {
		return 0, false
	}
	return int(s[i]-'0')*10 + int(s[i+1]-'0'), true
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

// unquoteSimple returns the contents of a JSON string; ok is false for any
// other JSON value.
func unquoteSimple(b []byte) (string, bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	if bytes.IndexByte(b, '\\') < 0 {
		return string(b[1 : len(b)-1]), true
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return "", false
	}
	return s, true
}
