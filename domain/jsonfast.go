package domain

import (
	"bytes"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Building blocks for JSONCodec implementations: writers that produce
// exactly encoding/json's bytes and a reader of the same form. They are
// exported so event types outside this package (app.ReservationTaken) can
// implement JSONCodec too.

const hexDigits = "0123456789abcdef"

// jsonSafe[b] reports whether encoding/json writes byte b of a string as
// it is: ASCII from space on, except " \ and the HTML-escaped < > &.
// jsonPlain[b] reports whether a JSON string may hold b unescaped and
// means b: the same, with < > & too. Bytes from 0x80 on need a closer look.
var jsonSafe, jsonPlain = func() (safe, plain [256]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		plain[b] = b != '"' && b != '\\'
		safe[b] = plain[b] && b != '<' && b != '>' && b != '&'
	}
	return safe, plain
}()

// AppendJSONString appends s as a JSON string exactly as json.Marshal writes
// it: HTML-escaped (<, >, & as \u003c...), U+2028 and U+2029 escaped, and
// each byte of invalid UTF-8 replaced by \ufffd.
func AppendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	return append(appendJSONStringBody(dst, s), '"')
}

// appendJSONStringBody is encoding/json's appendString (escapeHTML) without
// the quotes.
func appendJSONStringBody(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if jsonSafe[b] {
			i++
			continue
		}
		if b < utf8.RuneSelf {
			dst = appendJSONEscape(append(dst, s[start:i]...), b)
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(append(dst, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, s[start:]...)
}

// appendJSONEscape appends the escape encoding/json writes for ASCII byte b.
func appendJSONEscape(dst []byte, b byte) []byte {
	switch b {
	case '\\', '"':
		return append(dst, '\\', b)
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
}

// AppendJSONTime appends t as json.Marshal writes a time.Time (quoted RFC
// 3339 with nanoseconds as needed). ok is false when json.Marshal would
// fail instead (a year outside 0-9999, for example).
func AppendJSONTime(dst []byte, t time.Time) (out []byte, ok bool) {
	out, err := t.AppendText(append(dst, '"'))
	if err != nil {
		return dst, false
	}
	return append(out, '"'), true
}

// appendJSONInt and appendJSONBool have the shape of AppendJSONString so
// that appendOptional and appendPtr can take any of them.
func appendJSONInt(dst []byte, v int) []byte     { return strconv.AppendInt(dst, int64(v), 10) }
func appendJSONBool(dst []byte, v bool) []byte   { return strconv.AppendBool(dst, v) }
func appendJSONInt64(dst []byte, v int64) []byte { return strconv.AppendInt(dst, v, 10) }

// appendOptional appends key and o's JSON (null or the value) when o is
// present, as encoding/json writes an `omitzero` Optional field.
func appendOptional[T any](dst []byte, key string, o Optional[T], value func([]byte, T) []byte) []byte {
	switch {
	case !o.Present:
		return dst
	case o.Null:
		return append(append(dst, key...), "null"...)
	}
	return value(append(dst, key...), o.Value)
}

// appendPtr appends key and *p when p is not nil, as encoding/json writes
// an `omitempty` pointer field.
func appendPtr[T any](dst []byte, key string, p *T, value func([]byte, T) []byte) []byte {
	if p == nil {
		return dst
	}
	return value(append(dst, key...), *p)
}

// JSONReader reads JSON in the form encoding/json writes it, for
// JSONCodec.DecodeJSON: the caller spells out the expected text around
// values (keys in order, no spaces) and reads the values. The first
// mismatch fails the reader, after which every read returns a zero value
// and OK reports false; the caller then leaves the data to encoding/json.
//
// Values are read exactly as json.Unmarshal reads them into the Go type, or
// not at all: strings with invalid UTF-8 or escaped surrogates, numbers
// with fractions or exponents, and integers out of range fail the reader.
type JSONReader struct {
	data   []byte
	i      int
	failed bool
}

// NewJSONReader returns a reader at the start of data.
func NewJSONReader(data []byte) JSONReader { return JSONReader{data: data} }

// Failed reports whether a read has failed; loops over arrays stop on it.
func (r *JSONReader) Failed() bool { return r.failed }

// OK reports whether everything matched so far and all of data was read.
func (r *JSONReader) OK() bool { return !r.failed && r.i == len(r.data) }

// Expect consumes lit, which must come next.
func (r *JSONReader) Expect(lit string) {
	if !r.Next(lit) {
		r.failed = true
	}
}

// Next consumes lit and reports true when it comes next; otherwise it
// leaves the reader as it is. Use it for keys that may be left out.
func (r *JSONReader) Next(lit string) bool {
	if r.failed || !bytes.HasPrefix(r.data[r.i:], []byte(lit)) {
		return false
	}
	r.i += len(lit)
	return true
}

// Null consumes a JSON null and reports true when one comes next.
func (r *JSONReader) Null() bool { return r.Next("null") }

// Bool reads true or false.
func (r *JSONReader) Bool() bool {
	switch {
	case r.Next("true"):
		return true
	case !r.Next("false"):
		r.failed = true
	}
	return false
}

// Int64 reads an integer -?(0|[1-9][0-9]*) that fits an int64.
func (r *JSONReader) Int64() int64 { return r.int(64) }

// Int reads an integer that fits an int.
func (r *JSONReader) Int() int { return int(r.int(strconv.IntSize)) }

func (r *JSONReader) int(bits int) int64 {
	if r.failed {
		return 0
	}
	start, j := r.i, r.i
	if j < len(r.data) && r.data[j] == '-' {
		j++
	}
	digits := j
	for j < len(r.data) && r.data[j] >= '0' && r.data[j] <= '9' {
		j++
	}
	if j == digits || (r.data[digits] == '0' && j > digits+1) {
		r.failed = true
		return 0
	}
	n, err := strconv.ParseInt(string(r.data[start:j]), 10, bits)
	if err != nil {
		r.failed = true
		return 0
	}
	r.i = j
	return n
}

// Str reads a string. Text without escapes is taken as is (it must be
// valid UTF-8); the escapes \" \\ \/ \b \f \n \r \t and \uXXXX outside the
// surrogate range are decoded.
func (r *JSONReader) Str() string {
	if r.failed || r.i >= len(r.data) || r.data[r.i] != '"' {
		r.failed = true
		return ""
	}
	var buf []byte // the text so far, once it has an escape
	start := r.i + 1
	for j := start; j < len(r.data); {
		switch c := r.data[j]; {
		case jsonPlain[c]:
			j++
		case c == '"':
			r.i = j + 1
			if buf == nil {
				return string(r.data[start:j])
			}
			return string(append(buf, r.data[start:j]...))
		case c == '\\':
			var ok bool
			if buf, j, ok = appendUnescaped(append(buf, r.data[start:j]...), r.data, j); !ok {
				r.failed = true
				return ""
			}
			start = j
		case c < utf8.RuneSelf:
			r.failed = true // a control character
			return ""
		default:
			c, size := utf8.DecodeRune(r.data[j:])
			if c == utf8.RuneError && size == 1 {
				r.failed = true
				return ""
			}
			j += size
		}
	}
	r.failed = true
	return ""
}

// appendUnescaped decodes the escape at data[j] (a backslash) onto buf and
// returns the index after it.
func appendUnescaped(buf, data []byte, j int) ([]byte, int, bool) {
	if j+1 >= len(data) {
		return buf, j, false
	}
	switch e := data[j+1]; e {
	case '"', '\\', '/':
		return append(buf, e), j + 2, true
	case 'b':
		return append(buf, '\b'), j + 2, true
	case 'f':
		return append(buf, '\f'), j + 2, true
	case 'n':
		return append(buf, '\n'), j + 2, true
	case 'r':
		return append(buf, '\r'), j + 2, true
	case 't':
		return append(buf, '\t'), j + 2, true
	case 'u':
		if j+6 > len(data) {
			return buf, j, false
		}
		n, err := strconv.ParseUint(string(data[j+2:j+6]), 16, 16)
		if err != nil || utf16.IsSurrogate(rune(n)) {
			return buf, j, false
		}
		return utf8.AppendRune(buf, rune(n)), j + 6, true
	}
	return buf, j, false
}

// Time reads a time.Time as encoding/json does, through its UnmarshalJSON.
func (r *JSONReader) Time() time.Time {
	var t time.Time
	if r.failed || r.i >= len(r.data) || r.data[r.i] != '"' {
		r.failed = true
		return t
	}
	end := bytes.IndexByte(r.data[r.i+1:], '"')
	if end < 0 {
		r.failed = true
		return t
	}
	raw := r.data[r.i : r.i+end+2]
	if bytes.IndexByte(raw, '\\') >= 0 || t.UnmarshalJSON(raw) != nil {
		r.failed = true
		return time.Time{}
	}
	r.i += len(raw)
	return t
}

// readOptional reads key and an Optional value (null or a value) into o
// when key comes next, as encoding/json reads an Optional field; a missing
// key leaves o as it is.
func readOptional[T any](r *JSONReader, key string, o *Optional[T], value func(*JSONReader) T) {
	if !r.Next(key) {
		return
	}
	if r.Null() {
		*o = Null[T]()
		return
	}
	*o = Some(value(r))
}

// readPtr reads key and a value into a new *p when key comes next; a
// missing key leaves *p as it is.
func readPtr[T any](r *JSONReader, key string, p **T, value func(*JSONReader) T) {
	if r.Next(key) {
		v := value(r)
		*p = &v
	}
}
