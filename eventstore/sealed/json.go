package sealed

import (
	"errors"
	"fmt"
)

// member is one top-level member of a JSON object: data[keyStart:keyEnd]
// is its key without quotes (escapes left as written), data[start:end]
// its whole text from the key's opening quote to the value's end, and
// data[valStart:end] its value.
type member struct {
	keyStart, keyEnd int
	start, valStart  int
	end              int
}

var errNotObject = errors.New("sealed: event data is not a JSON object")

// members returns the top-level members of the JSON object data, in
// order. It checks the structure it walks (quotes, brackets, separators),
// not the grammar of numbers and literals: data is what the event
// registry encoded, and the registry decodes the result strictly.
func members(data []byte, out []member) ([]member, error) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, errNotObject
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return out, checkEnd(data, i+1)
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return nil, fmt.Errorf("%w: want a key at byte %d", errNotObject, i)
		}
		var m member
		m.start, m.keyStart = i, i+1
		end, err := skipString(data, i)
		if err != nil {
			return nil, err
		}
		m.keyEnd = end - 1
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return nil, fmt.Errorf("%w: want ':' at byte %d", errNotObject, i)
		}
		i = skipSpace(data, i+1)
		m.valStart = i
		if i, err = skipValue(data, i); err != nil {
			return nil, err
		}
		m.end = i
		out = append(out, m)
		i = skipSpace(data, i)
		if i >= len(data) {
			return nil, fmt.Errorf("%w: unterminated", errNotObject)
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return out, checkEnd(data, i+1)
		default:
			return nil, fmt.Errorf("%w: want ',' or '}' at byte %d", errNotObject, i)
		}
	}
}

func checkEnd(data []byte, i int) error {
	if skipSpace(data, i) != len(data) {
		return fmt.Errorf("%w: data after the object", errNotObject)
	}
	return nil
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at data[i]
// (a quote).
func skipString(data []byte, i int) (int, error) {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("%w: unterminated string at byte %d", errNotObject, i)
}

// skipValue returns the index after the value that starts at data[i].
func skipValue(data []byte, i int) (int, error) {
	if i >= len(data) {
		return 0, fmt.Errorf("%w: missing value", errNotObject)
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end, err := skipString(data, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, fmt.Errorf("%w: unterminated value at byte %d", errNotObject, i)
	}
	j := i
	for j < len(data) && data[j] != ',' && data[j] != '}' && data[j] != ']' &&
		data[j] != ' ' && data[j] != '\t' && data[j] != '\n' && data[j] != '\r' {
		j++
	}
	if j == i {
		return 0, fmt.Errorf("%w: missing value at byte %d", errNotObject, i)
	}
	return j, nil
}

// elements returns the values of the JSON array data as [start, end)
// pairs.
func elements(data []byte) ([][2]int, error) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return nil, errors.New("sealed: sealed values are not a JSON array")
	}
	var out [][2]int
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return out, nil
	}
	for {
		end, err := skipValue(data, i)
		if err != nil {
			return nil, err
		}
		out = append(out, [2]int{i, end})
		i = skipSpace(data, end)
		if i >= len(data) {
			return nil, errors.New("sealed: unterminated array")
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case ']':
			if skipSpace(data, i+1) != len(data) {
				return nil, errors.New("sealed: data after the array")
			}
			return out, nil
		default:
			return nil, fmt.Errorf("sealed: want ',' or ']' at byte %d", i)
		}
	}
}
