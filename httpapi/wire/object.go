package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultMaxBytes is the body size limit when DecodeOptions.MaxBytes is 0.
const DefaultMaxBytes = 1 << 20

// Field error messages. They complete the field name in an error body
// ("provider: must be an integer").
const (
	MsgRequired   = "required"
	MsgInt        = "must be an integer"
	MsgIntRange   = "is out of range for a 64-bit integer"
	MsgBool       = "must be a boolean (true/false or 1/0)"
	MsgString     = "must be a string"
	MsgObject     = "must be an object"
	MsgIntList    = "must be a list of integers"
	MsgObjectList = "must be a list of objects"
)

// DefaultReadOnly returns the read-only fields dropped from request objects
// when DecodeOptions.ReadOnly is nil: what the API returns and clients send
// back, but nobody may set.
func DefaultReadOnly() []string { return slices.Clone(defaultReadOnly) }

var defaultReadOnly = []string{"created", "last_online", "*_dto"}

// DecodeOptions tune DecodeObject and ReadObject.
type DecodeOptions struct {
	// MaxBytes limits the body; 0 means DefaultMaxBytes.
	MaxBytes int64
	// ReadOnly names top-level fields to drop before any getter sees them.
	// A leading or trailing * matches any suffix or prefix ("*_dto").
	// Nil means DefaultReadOnly(); an empty non-nil slice drops nothing.
	ReadOnly []string
	// SizeHint is the body's declared length (Content-Length), for
	// ReadObject to size its buffer; 0 or less means unknown. A wrong hint
	// costs only some copying.
	SizeHint int64
}

func (o DecodeOptions) maxBytes() int64 {
	if o.MaxBytes <= 0 {
		return DefaultMaxBytes
	}
	return o.MaxBytes
}

// BodyError is a body that is not a JSON object (empty, invalid JSON, an
// array, trailing data). Answer it with 400.
type BodyError struct{ Reason string }

func (e *BodyError) Error() string { return "request body: " + e.Reason }

// TooLargeError is a body over the size limit. Answer it with 413.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("request body exceeds the limit of %d bytes", e.Limit)
}

// FieldErrors maps field names to what is wrong with them. Answer it with
// 400 validation_failed naming each field.
type FieldErrors map[string]string

func (e FieldErrors) Error() string {
	parts := make([]string, 0, len(e))
	for _, name := range slices.Sorted(maps.Keys(e)) {
		parts = append(parts, name+": "+e[name])
	}
	return strings.Join(parts, "; ")
}

// Object is a decoded JSON object whose fields are read by typed getters.
// Each getter returns the field's Optional and records a type error under
// the field's name; Err returns them all. An Object is not safe for
// concurrent use.
type Object struct {
	fields  map[string]any
	read    readSet
	ignored []string
	prefix  string       // "billing." or "commands[2]." for nested objects
	errs    *FieldErrors // shared with nested objects
	ownErrs FieldErrors  // what errs points to in a top-level object
}

// ReadObject reads a JSON object from r, at most opts.MaxBytes of it.
func ReadObject(r io.Reader, opts DecodeOptions) (*Object, error) {
	limit := opts.maxBytes()
	buf := getBuffer(min(opts.SizeHint, limit, maxPooledBuffer))
	defer putBuffer(buf)
	data, err := readAtMost(r, (*buf)[:0], limit+1)
	*buf = data
	if err != nil {
		var mbe *http.MaxBytesError // the body was wrapped with http.MaxBytesReader
		if errors.As(err, &mbe) {
			return nil, &TooLargeError{Limit: mbe.Limit}
		}
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Limit: limit}
	}
	// DecodeObject keeps nothing of data (its strings are copies), so the
	// buffer can go back to the pool.
	return DecodeObject(data, opts)
}

// readAtMost appends what r gives to buf until EOF or n bytes, growing buf
// as needed (io.ReadAll over an io.LimitReader, into a given buffer).
func readAtMost(r io.Reader, buf []byte, n int64) ([]byte, error) {
	for int64(len(buf)) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(max(cap(buf), 512), int(n-int64(len(buf)))))
		}
		room := buf[len(buf):min(int64(cap(buf)), n)]
		read, err := r.Read(room)
		buf = buf[:len(buf)+read]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// Request bodies are read into pooled buffers; larger ones than
// maxPooledBuffer are left to the garbage collector.
const maxPooledBuffer = 64 << 10

var buffers = sync.Pool{New: func() any { return new([]byte) }}

// getBuffer returns a pooled buffer with room for size bytes and one more,
// so that the read that finds the end needs no growth.
func getBuffer(size int64) *[]byte {
	buf := buffers.Get().(*[]byte)
	if size > 0 && int64(cap(*buf)) <= size {
		*buf = make([]byte, 0, size+1)
	}
	return buf
}

func putBuffer(buf *[]byte) {
	if cap(*buf) > maxPooledBuffer+1 {
		return
	}
	*buf = (*buf)[:0]
	buffers.Put(buf)
}

// DecodeObject decodes data, which must hold exactly one JSON object.
func DecodeObject(data []byte, opts DecodeOptions) (*Object, error) {
	if limit := opts.maxBytes(); int64(len(data)) > limit {
		return nil, &TooLargeError{Limit: limit}
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, &BodyError{Reason: "empty; want a JSON object"}
	}
	if trimmed[0] != '{' {
		return nil, &BodyError{Reason: "must be a JSON object"}
	}
	fields, ok := parseObject(trimmed)
	if !ok {
		var err error
		if fields, err = decodeJSON(data); err != nil {
			return nil, err
		}
		// The fast path refuses invalid text, which encoding/json would
		// have replaced with U+FFFD: name the field instead.
		if field, bad := invalidText(data); bad {
			return nil, FieldErrors{field: MsgText}
		}
		// The fast path refuses a repeated key too, which encoding/json
		// would have let the last one win.
		if field, dup := duplicateMember(data); dup {
			return nil, FieldErrors{field: MsgDuplicate}
		}
	}
	readOnly := opts.ReadOnly
	if readOnly == nil {
		readOnly = defaultReadOnly
	}
	o := newObject(fields, "", nil)
	o.errs = &o.ownErrs // one allocation less than new(FieldErrors)
	for name := range fields {
		if matchAny(readOnly, name) {
			delete(fields, name)
			o.ignored = append(o.ignored, name)
		}
	}
	slices.Sort(o.ignored)
	return o, nil
}

// decodeJSON decodes data with encoding/json, the reference for what is
// valid and for the errors: what parseObject does not take comes here.
func decodeJSON(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var fields map[string]any
	if err := dec.Decode(&fields); err != nil {
		return nil, &BodyError{Reason: "invalid JSON: " + jsonErrorText(err)}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &BodyError{Reason: "invalid JSON: data after the object"}
	}
	return fields, nil
}

func newObject(fields map[string]any, prefix string, errs *FieldErrors) *Object {
	return &Object{fields: fields, prefix: prefix, errs: errs}
}

// readSet holds the names of the fields an Object's getters have read. A
// handler reads a few names, so they are kept in an array searched in
// order, which costs less than a map; past its size a map takes over.
type readSet struct {
	few  [16]string
	n    int
	many map[string]bool
}

func (s *readSet) has(name string) bool {
	if s.many != nil {
		return s.many[name]
	}
	return slices.Contains(s.few[:s.n], name)
}

func (s *readSet) add(name string) {
	switch {
	case s.has(name):
	case s.many != nil:
		s.many[name] = true
	case s.n < len(s.few):
		s.few[s.n] = name
		s.n++
	default:
		s.many = make(map[string]bool, 2*len(s.few))
		for _, n := range s.few {
			s.many[n] = true
		}
		s.many[name] = true
	}
}

func jsonErrorText(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "unexpected end of input"
	}
	return err.Error()
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		switch {
		case p == name:
			return true
		case strings.HasPrefix(p, "*") && strings.HasSuffix(name, p[1:]):
			return true
		case strings.HasSuffix(p, "*") && strings.HasPrefix(name, p[:len(p)-1]):
			return true
		}
	}
	return false
}

// Err returns the field errors recorded so far (by getters, Require and
// Fail, on this object and every nested one), or nil.
func (o *Object) Err() error {
	if len(*o.errs) == 0 {
		return nil
	}
	return maps.Clone(*o.errs)
}

// Fail records msg for field name unless the field already has an error:
// handlers add their own checks to the same error body.
func (o *Object) Fail(name, msg string) {
	if *o.errs == nil {
		*o.errs = FieldErrors{}
	}
	key := o.prefix + name
	if _, dup := (*o.errs)[key]; !dup {
		(*o.errs)[key] = msg
	}
}

// Require records "required" for each name that is absent, null or a blank
// string (what forms send for nothing).
func (o *Object) Require(names ...string) {
	for _, name := range names {
		if v, ok := o.fields[name]; !ok || v == nil || emptyString(v) {
			o.Fail(name, MsgRequired)
		}
	}
}

// Has reports whether the object has field name (null included). It does
// not count as reading the field.
func (o *Object) Has(name string) bool {
	_, ok := o.fields[name]
	return ok
}

// Unknown returns, sorted, the fields that no getter has read: call it after
// the getters to log or reject what a client sent in vain.
func (o *Object) Unknown() []string {
	var names []string
	for name := range o.fields {
		if !o.read.has(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Ignored returns, sorted, the read-only fields that were dropped.
func (o *Object) Ignored() []string { return slices.Clone(o.ignored) }

// get marks name read and returns its value; present is false when it is
// absent, null is true for JSON null.
func (o *Object) get(name string) (v any, present, null bool) {
	v, present = o.fields[name]
	if !present {
		return nil, false, false
	}
	o.read.add(name)
	return v, true, v == nil
}

// emptyString reports whether v is "", which counts as null for every
// non-string type.
func emptyString(v any) bool {
	s, ok := v.(string)
	return ok && strings.TrimSpace(s) == ""
}

// scalar implements the getters: conv turns a non-null value into T or an
// error message. For a non-nullable field null and "" read as absent; after
// an error the field reads as absent too.
func scalar[T any](o *Object, name string, nullable, emptyIsNull bool, conv func(any) (T, string)) Optional[T] {
	v, present, null := o.get(name)
	if present && !null && emptyIsNull && emptyString(v) {
		null = true
	}
	switch {
	case !present:
		return Optional[T]{}
	case null && nullable:
		return Optional[T]{Present: true, Null: true}
	case null:
		return Optional[T]{}
	}
	val, msg := conv(v)
	if msg != "" {
		o.Fail(name, msg)
		return Optional[T]{} // a handler that forgets Err changes nothing
	}
	return Optional[T]{Present: true, Value: val}
}

// Int64 reads an integer: a JSON number with an integral value (12, 12.0,
// 1.2e1) or a decimal string ("12", " -3 "). Null and "" read as absent.
func (o *Object) Int64(name string) Optional[int64] {
	return scalar(o, name, false, true, toInt64)
}

// NullableInt64 is Int64 for a nullable field: null and "" read as Null.
func (o *Object) NullableInt64(name string) Optional[int64] {
	return scalar(o, name, true, true, toInt64)
}

// Bool reads a boolean: true/false, 1/0, "1"/"0", "true"/"false" (any case).
// Null and "" read as absent.
func (o *Object) Bool(name string) Optional[bool] {
	return scalar(o, name, false, true, toBool)
}

// String reads a string; a JSON number is taken as its literal text (a
// numeric login sent unquoted). Null reads as absent, "" as "".
func (o *Object) String(name string) Optional[string] {
	return scalar(o, name, false, false, toString)
}

// NullableString is String for a nullable field: null reads as Null, "" as "".
func (o *Object) NullableString(name string) Optional[string] {
	return scalar(o, name, true, false, toString)
}

// DateTime reads a date-time in any form ParseDateTime accepts, in UTC.
// Null and "" read as absent.
func (o *Object) DateTime(name string) Optional[time.Time] {
	return scalar(o, name, false, true, toDateTime)
}

// NullableDateTime is DateTime for a nullable field (a subscription's stop):
// null and "" read as Null.
func (o *Object) NullableDateTime(name string) Optional[time.Time] {
	return scalar(o, name, true, true, toDateTime)
}

// PostTime reads a command's post_time (ParsePostTime), in UTC. Null and ""
// read as absent.
func (o *Object) PostTime(name string) Optional[time.Time] {
	return scalar(o, name, false, true, toPostTime)
}

// Int64List reads a list of integers, each as Int64 reads one (null and ""
// elements are errors). Null reads as absent; [] as an empty, non-nil list.
func (o *Object) Int64List(name string) Optional[[]int64] {
	return scalar(o, name, false, false, func(v any) ([]int64, string) {
		items, ok := v.([]any)
		if !ok {
			return nil, MsgIntList
		}
		out := make([]int64, len(items))
		for i, item := range items {
			n, msg := toInt64(item)
			if msg != "" {
				return nil, fmt.Sprintf("element %d %s", i, msg)
			}
			out[i] = n
		}
		return out, ""
	})
}

// Object reads a nested object (a provider's billing). Errors of its fields
// are recorded as "billing.url". Null reads as absent.
func (o *Object) Object(name string) Optional[*Object] {
	return scalar(o, name, false, false, func(v any) (*Object, string) {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, MsgObject
		}
		return newObject(m, o.prefix+name+".", o.errs), ""
	})
}

// ObjectList reads a list of objects (a send's commands). Errors of their
// fields are recorded as "commands[1].type". Null reads as absent.
func (o *Object) ObjectList(name string) Optional[[]*Object] {
	return scalar(o, name, false, false, func(v any) ([]*Object, string) {
		items, ok := v.([]any)
		if !ok {
			return nil, MsgObjectList
		}
		out := make([]*Object, len(items))
		for i, item := range items {
			m, ok := item.(map[string]any)
			if !ok {
				return nil, fmt.Sprintf("element %d %s", i, MsgObject)
			}
			out[i] = newObject(m, o.prefix+name+"["+strconv.Itoa(i)+"].", o.errs)
		}
		return out, ""
	})
}

// Raw returns the decoded value of a field for a handler's own decoding:
// nil, bool, json.Number, string, []any or map[string]any. It marks the
// field read.
func (o *Object) Raw(name string) (v any, present bool) {
	v, present, _ = o.get(name)
	return v, present
}

func toInt64(v any) (int64, string) {
	switch v := v.(type) {
	case json.Number:
		return parseJSONInt(string(v))
	case string:
		return parseDecimal(strings.TrimSpace(v))
	}
	return 0, MsgInt
}

func toBool(v any) (bool, string) {
	switch v := v.(type) {
	case bool:
		return v, ""
	case json.Number:
		switch n, msg := parseJSONInt(string(v)); {
		case msg == "" && n == 0:
			return false, ""
		case msg == "" && n == 1:
			return true, ""
		}
	case string:
		switch s := strings.TrimSpace(v); {
		case s == "1" || strings.EqualFold(s, "true"):
			return true, ""
		case s == "0" || strings.EqualFold(s, "false"):
			return false, ""
		}
	}
	return false, MsgBool
}

func toString(v any) (string, string) {
	switch v := v.(type) {
	case string:
		return v, ""
	case json.Number:
		return string(v), ""
	}
	return "", MsgString
}

func toDateTime(v any) (time.Time, string) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, ErrDateTime.Error()
	}
	t, err := ParseDateTime(strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, err.Error()
	}
	return t, ""
}

func toPostTime(v any) (time.Time, string) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, ErrPostTime.Error()
	}
	t, err := ParsePostTime(strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, err.Error()
	}
	return t, ""
}

// parseDecimal parses an optionally signed run of decimal digits: the only
// integer form accepted in strings ("12", "-3"; not "1e3", "0x10", "NaN").
func parseDecimal(s string) (int64, string) {
	digits := s
	if digits != "" && (digits[0] == '+' || digits[0] == '-') {
		digits = digits[1:]
	}
	if digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, MsgInt
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, MsgIntRange
	}
	return n, ""
}

// ParseInt parses an integer as the getters do for strings: optional sign
// and decimal digits, surrounding spaces allowed. The error's text is a
// field message (MsgInt or MsgIntRange). Query parameter parsers use it.
func ParseInt(s string) (int64, error) {
	n, msg := parseDecimal(strings.TrimSpace(s))
	if msg != "" {
		return 0, errors.New(msg)
	}
	return n, nil
}

// ParseBool parses a boolean as the getters do for strings: 1/0, true/false
// (any case), surrounding spaces allowed.
func ParseBool(s string) (bool, error) {
	b, msg := toBool(s)
	if msg != "" {
		return false, errors.New(msg)
	}
	return b, nil
}

// parseJSONInt returns the value of a JSON number literal if it is an
// integer that fits in int64, exactly, whatever its notation (12, -0, 12.00,
// 1.2e1, 1200e-2); else MsgInt (a fraction or not a number) or MsgIntRange.
func parseJSONInt(lit string) (int64, string) {
	if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
		return n, ""
	}
	s, neg := lit, false
	if s != "" && s[0] == '-' {
		s, neg = s[1:], true
	}
	exp := 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil {
			var ne *strconv.NumError
			if !errors.As(err, &ne) || ne.Err != strconv.ErrRange {
				return 0, MsgInt
			}
			e = 1 << 30
			if strings.HasPrefix(s[i+1:], "-") {
				e = -e
			}
		}
		exp = max(min(e, 1<<30), -1<<30)
		s = s[:i]
	}
	intPart, frac := s, ""
	if i := strings.IndexByte(s, '.'); i >= 0 {
		intPart, frac = s[:i], s[i+1:]
	}
	digits := intPart + frac
	if intPart == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, MsgInt
	}
	first := strings.IndexFunc(digits, func(r rune) bool { return r != '0' })
	if first < 0 {
		return 0, "" // 0, -0, 0.000e7
	}
	last := strings.LastIndexFunc(digits, func(r rune) bool { return r != '0' })
	point := len(intPart) + exp // digits[:point] is the integer part
	if last >= point {
		return 0, MsgInt // a non-zero digit after the point
	}
	if point-first > 19 {
		return 0, MsgIntRange
	}
	mag := digits[first:min(point, len(digits))] + strings.Repeat("0", max(point-len(digits), 0))
	u, err := strconv.ParseUint(mag, 10, 64)
	switch {
	case err != nil:
		return 0, MsgIntRange
	case neg && u <= 1<<63:
		return int64(-u), "" // -u wraps to math.MinInt64 for u == 1<<63
	case !neg && u <= 1<<63-1:
		return int64(u), ""
	}
	return 0, MsgIntRange
}
