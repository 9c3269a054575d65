package wire

import (
	"errors"
	"testing"
)

// A member given twice in one object, at any depth, is refused naming it;
// the same key in different objects is not a repeat.
func TestDecodeObjectRefusesRepeatedMembers(t *testing.T) {
	for body, want := range map[string]string{
		`{"login":"a","fullname":"F","login":"b"}`:                         "login",
		`{"device":{"unique_id":"x","class":"stb","unique_id":"y"}}`:       "device.unique_id",
		`{"commands":[{"command":"a"},{"command":"b","type":1,"type":2}]}`: "commands[1].type",
		// A key that is empty, or would read as a path, is named quoted;
		`{"":1,"":2}`:               `""`,
		`{"":{"":"","":""}}`:        `"".""`,
		`{"device":{"":1,"":2}}`:    `device.""`,
		`{"a.b":{"c":1,"c":2}}`:     `"a.b".c`,
		`{"x":{"y[0]":1,"y[0]":2}}`: `x."y[0]"`,
		// and so is one that holds a character that does not print.
		`{"a\nb":{"c":1,"c":2}}`: `"a\nb".c`,
	} {
		_, err := DecodeObject([]byte(body), DecodeOptions{})
		var fe FieldErrors
		if !errors.As(err, &fe) || fe[want] != MsgDuplicate || len(fe) != 1 {
			t.Errorf("%s: %v, want %s %q", body, err, want, MsgDuplicate)
		}
	}
	for _, body := range []string{`{"a":{"x":1},"b":{"x":2}}`, `{"ids":[1,1,1],"a":[{"k":1},{"k":2}]}`} {
		if _, err := DecodeObject([]byte(body), DecodeOptions{}); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
}

// FuzzDuplicateMember: on any input, never a panic, and a body with a
// repeated member is never accepted.
func FuzzDuplicateMember(f *testing.F) {
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Add([]byte(`{"b":{"c":[1,{"d":0,"d":1}]}}`))
	f.Add([]byte(`{"":1,"":2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, found := duplicateMember(data); found {
			if _, err := DecodeObject(data, DecodeOptions{}); err == nil {
				t.Fatalf("a body with a repeated member was accepted: %q", data)
			}
		}
	})
}
