package wire

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
	"sync/atomic"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// parseObject is DecodeObject's fast path: a single-pass parser of one JSON
// object (and nothing after it but white space) into exactly the values
// encoding/json's Decoder with UseNumber makes of it: map[string]any,
// []any (non-nil, also when empty), string, json.Number (the literal's
// text), bool and nil, the last of duplicate keys winning. It reports ok
// false for anything it does not take: invalid JSON, but also strings with
// invalid UTF-8 and deep nesting, which are valid. DecodeObject then hands
// the body to encoding/json, which stays the reference for what is accepted
// and for the error messages. FuzzParseObjectMatchesJSON holds the two
// together.
//
// encoding/json costs a decoder, a reflect walk and allocations per value;
// this does one pass and allocates only the values themselves.
func parseObject(data []byte) (fields map[string]any, ok bool) {
	p := parser{data: data}
	p.skipSpace()
	if p.peek() != '{' {
		return nil, false
	}
	// Size the top-level map once: every key is followed by a colon, so
	// their count bounds the keys (nested ones included, hence the cap).
	fields, ok = p.object(min(bytes.Count(data, colon), 64))
	p.skipSpace()
	return fields, ok && p.pos == len(p.data)
}

var colon = []byte{':'}

// maxParseDepth bounds the nesting the fast path follows; deeper bodies go
// to encoding/json (whose own limit is 10000).
const maxParseDepth = 64

type parser struct {
	data  []byte
	pos   int
	depth int
}

// peek returns the byte at the position, or 0 at the end (0 is invalid
// wherever peek's result is tested).
func (p *parser) peek() byte {
	if p.pos < len(p.data) {
		return p.data[p.pos]
	}
	return 0
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// expect consumes c after optional white space.
func (p *parser) expect(c byte) bool {
	p.skipSpace()
	if p.peek() != c {
		return false
	}
	p.pos++
	return true
}

func (p *parser) value() (any, bool) {
	switch c := p.peek(); {
	case c == '{':
		m, ok := p.object(0)
		return m, ok
	case c == '[':
		return p.array()
	case c == '"':
		return p.string(false)
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, false
}

func (p *parser) literal(word string) bool {
	if len(p.data)-p.pos < len(word) || string(p.data[p.pos:p.pos+len(word)]) != word {
		return false
	}
	p.pos += len(word)
	return true
}

// object parses an object at '{' into a map sized for hint keys.
func (p *parser) object(hint int) (map[string]any, bool) {
	m := make(map[string]any, hint)
	empty, ok := p.open('}')
	if empty || !ok {
		return m, ok
	}
	for more := true; more; {
		p.skipSpace()
		if p.peek() != '"' {
			return nil, false
		}
		key, ok := p.string(true)
		if !ok || !p.expect(':') {
			return nil, false
		}
		p.skipSpace()
		v, ok := p.value()
		if !ok {
			return nil, false
		}
		if _, dup := m[key]; dup {
			return nil, false // encoding/json's path names it
		}
		m[key] = v
		if more, ok = p.separator('}'); !ok {
			return nil, false
		}
	}
	return m, true
}

// array parses an array at '['.
func (p *parser) array() (any, bool) {
	items := make([]any, 0)
	empty, ok := p.open(']')
	if empty || !ok {
		return items, ok
	}
	for more := true; more; {
		p.skipSpace()
		v, ok := p.value()
		if !ok {
			return nil, false
		}
		items = append(items, v)
		if more, ok = p.separator(']'); !ok {
			return nil, false
		}
	}
	return items, true
}

// open consumes the '{' or '[' at the position, and close too if it follows
// at once (empty).
func (p *parser) open(close byte) (empty, ok bool) {
	if p.depth >= maxParseDepth {
		return false, false
	}
	p.depth++
	p.pos++
	p.skipSpace()
	if p.peek() == close {
		p.pos++
		p.depth--
		return true, true
	}
	return false, true
}

// separator consumes what follows a member or an element: a comma (more
// follow) or close (the end).
func (p *parser) separator(close byte) (more, ok bool) {
	p.skipSpace()
	switch p.peek() {
	case ',':
		p.pos++
		return true, true
	case close:
		p.pos++
		p.depth--
		return false, true
	}
	return false, false
}

// number parses a number literal per RFC 8259:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *parser) number() (any, bool) {
	start := p.pos
	if p.peek() == '-' {
		p.pos++
	}
	switch c := p.peek(); {
	case c == '0':
		p.pos++
	case '1' <= c && c <= '9':
		p.digits()
	default:
		return nil, false
	}
	if p.peek() == '.' {
		p.pos++
		if !p.digits() {
			return nil, false
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.pos++
		if c := p.peek(); c == '+' || c == '-' {
			p.pos++
		}
		if !p.digits() {
			return nil, false
		}
	}
	return json.Number(p.data[start:p.pos]), true
}

// digits consumes a run of digits and reports whether it was not empty.
func (p *parser) digits() bool {
	start := p.pos
	for p.pos < len(p.data) && '0' <= p.data[p.pos] && p.data[p.pos] <= '9' {
		p.pos++
	}
	return p.pos > start
}

// string parses a string at '"'; intern says to intern it (object keys).
// Only valid UTF-8 is taken; encoding/json would replace invalid bytes
// with U+FFFD.
func (p *parser) string(intern bool) (string, bool) {
	raw, escaped, ok := p.stringBytes()
	switch {
	case !ok:
		return "", false
	case escaped:
		return unescape(raw)
	case intern:
		return internKey(raw), true
	}
	return string(raw), true
}

// stringBytes consumes a string at '"' and returns its raw content, and
// whether it has escapes; ok is false for a string that is not valid
// JSON of valid UTF-8.
func (p *parser) stringBytes() (raw []byte, escaped, ok bool) {
	p.pos++ // '"'
	start, ascii := p.pos, true
	for {
		for p.pos < len(p.data) && plainStringByte[p.data[p.pos]] {
			p.pos++
		}
		if p.pos >= len(p.data) {
			return nil, false, false
		}
		switch c := p.data[p.pos]; {
		case c == '"':
			raw = p.data[start:p.pos]
			p.pos++
			return raw, escaped, ascii || utf8.Valid(raw)
		case c < 0x20:
			return nil, false, false
		case c == '\\':
			escaped = true
			p.pos++ // the escaped byte is checked by unescape; it may be '"'
		default: // c >= utf8.RuneSelf
			ascii = false
		}
		p.pos++
	}
}

// plainStringByte marks the bytes a string's scan passes over: printable
// ASCII but the quote and the backslash.
var plainStringByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// keyCache interns object keys: bodies repeat the same few names, which
// would otherwise be allocated anew in every request. It is a fixed table
// indexed by a seeded hash of the key, each slot holding the last key that
// hashed there: it never grows, and keys made to collide only cost the
// allocation that interning saves otherwise.
var (
	keyCache [512]atomic.Pointer[string]
	keySeed  = maphash.MakeSeed()
)

// maxInternedKey bounds the keys interned; longer ones are rare.
const maxInternedKey = 40

func internKey(raw []byte) string {
	if len(raw) > maxInternedKey {
		return string(raw)
	}
	slot := &keyCache[maphash.Bytes(keySeed, raw)%uint64(len(keyCache))]
	if k := slot.Load(); k != nil && *k == string(raw) {
		return *k
	}
	k := string(raw)
	slot.Store(&k)
	return k
}

// unescape decodes the escapes of a string's raw content as encoding/json
// does: \uXXXX pairs of surrogates join. A lone surrogate, which
// encoding/json turns into U+FFFD, is refused (DecodeObject names the
// field: MsgText).
func unescape(raw []byte) (string, bool) {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(raw) {
			return "", false
		}
		switch e := raw[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, n := unicodeEscape(raw[i:])
			if n == 0 {
				return "", false
			}
			out = utf8.AppendRune(out, r)
			i += n
			continue
		default:
			return "", false
		}
		i += 2
	}
	return string(out), true
}

// unicodeEscape decodes the \uXXXX at the start of s, with the low half that
// follows a high surrogate; n is how many bytes it used, 0 when s does not
// start with a valid escape or holds half a surrogate pair.
func unicodeEscape(s []byte) (r rune, n int) {
	r = hex4(s)
	if r < 0 {
		return 0, 0
	}
	if !utf16.IsSurrogate(r) {
		return r, 6
	}
	if pair := utf16.DecodeRune(r, hex4(s[6:])); pair != unicode.ReplacementChar {
		return pair, 12
	}
	return 0, 0
}

// hex4 returns the value of a \uXXXX at the start of s, or -1.
func hex4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}
