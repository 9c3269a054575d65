package wire

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
)

// MsgDuplicate is the problem of a member given twice in one object:
// encoding/json would keep the last one silently, and which one a client
// meant cannot be known.
const MsgDuplicate = "appears more than once in its object"

// maxDuplicateDepth bounds the nesting duplicateMember follows.
const maxDuplicateDepth = 10000

// duplicateMember returns the path of the first member that repeats a key
// of its object in the valid JSON data ("login", "device.unique_id",
// "commands[1].type"), and whether there is one.
func duplicateMember(data []byte) (string, bool) {
	path, found, err := duplicateIn(json.NewDecoder(bytes.NewReader(data)), "", 0)
	return path, found && err == nil
}

// duplicateIn reads one value from dec, at path, and looks for a repeated
// key inside it.
func duplicateIn(dec *json.Decoder, path string, depth int) (string, bool, error) {
	if depth > maxDuplicateDepth {
		return "", false, nil
	}
	tok, err := dec.Token()
	if err != nil {
		return "", false, err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return "", false, err
			}
			key, _ := kt.(string)
			member := memberPath(path, key)
			if seen[key] {
				return member, true, nil
			}
			seen[key] = true
			if dup, found, err := duplicateIn(dec, member, depth+1); found || err != nil {
				return dup, found, err
			}
		}
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if dup, found, err := duplicateIn(dec, path+"["+strconv.Itoa(i)+"]", depth+1); found || err != nil {
				return dup, found, err
			}
		}
	default:
		return "", false, nil // a scalar
	}
	_, err = dec.Token() // the closing bracket
	return "", false, err
}

// MemberName is how an error names the member key of an object: as it is,
// unless it is empty, would read as a path itself ("a.b", "x[0]") or holds
// a character that does not print; then as JSON spells it, quoted. So every
// member has a name, a name points at one member, and an error message
// holds no control character a client sent.
func MemberName(key string) string {
	if key == "" || strings.ContainsAny(key, `.[]"`) || strings.ContainsFunc(key, notPrintable) {
		return strconv.Quote(key)
	}
	return key
}

func notPrintable(r rune) bool { return !unicode.IsPrint(r) }

// memberPath is the path of the member key of the object at path:
// {"":{"":1,"":2}} repeats `"".""`.
func memberPath(path, key string) string {
	if path == "" {
		return MemberName(key)
	}
	return path + "." + MemberName(key)
}
