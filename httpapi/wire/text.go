package wire

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MsgText is the problem of a string that is not valid text: bytes that
// are not UTF-8, or an escape of half a UTF-16 surrogate pair. Decoders
// would replace either with U+FFFD, so that "\xffx" and "\xfex" became one
// login; they are refused instead.
const MsgText = "must be valid UTF-8 text (no invalid bytes, no unpaired \\u surrogate escapes)"

// invalidText returns the name of the first field, as the getters name it
// ("login", "device.unique_id", "commands[1].type", "ids[2]"), whose name or
// string value is not valid text (MsgText); ok is false when there is none.
// data must be valid JSON.
func invalidText(data []byte) (field string, ok bool) {
	type frame struct {
		array bool
		index int    // of the next element, in an array
		key   string // of the current member, in an object
		atKey bool   // the next token of the object is a key
	}
	var stack []frame
	// path names the current value; key is a member name not yet entered.
	path := func(key string) string {
		var b strings.Builder
		for i, f := range stack {
			switch {
			case f.array:
				b.WriteString("[" + strconv.Itoa(f.index) + "]")
			case i == len(stack)-1 && key != "":
				writeName(&b, key)
			default:
				writeName(&b, f.key)
			}
		}
		return b.String()
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err == io.EOF || err != nil {
			return "", false
		}
		if n := len(stack); n > 0 && !stack[n-1].array && stack[n-1].atKey {
			if key, isKey := tok.(string); isKey {
				if !validText(data[start:dec.InputOffset()]) {
					return path(strings.ToValidUTF8(key, "\uFFFD")), true
				}
				stack[n-1].key, stack[n-1].atKey = key, false
				continue
			}
		}
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{', '[':
				stack = append(stack, frame{array: tok == '[', atKey: tok == '{'})
				continue // the container's own slot advances when it closes
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if !validText(data[start:dec.InputOffset()]) {
				return path(""), true
			}
		}
		// A value ended: move the enclosing container on.
		if n := len(stack); n > 0 {
			if stack[n-1].array {
				stack[n-1].index++
			} else {
				stack[n-1].atKey = true
			}
		}
	}
}

// writeName appends a member name to a field name: "device.unique_id",
// `device.""` (MemberName).
func writeName(b *strings.Builder, name string) {
	if b.Len() > 0 {
		b.WriteByte('.')
	}
	b.WriteString(MemberName(name))
}

// validText reports whether raw, the bytes of a JSON string token (with
// separators and blanks before it), is valid UTF-8 whose \u escapes pair
// every surrogate.
func validText(raw []byte) bool {
	if !utf8.Valid(raw) {
		return false
	}
	for i := 0; i+1 < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if raw[i+1] != 'u' {
			i++ // an escaped byte, maybe a backslash
			continue
		}
		r := hex4(raw[i:])
		if !utf16.IsSurrogate(r) {
			i += 5
			continue
		}
		if r >= 0xDC00 || i+6 > len(raw) || utf16.DecodeRune(r, hex4(raw[i+6:])) == utf8.RuneError {
			return false
		}
		i += 11
	}
	return true
}
