package simulate

import (
	"encoding/json"
	"testing"
)

// FuzzParseCommand: the simulator's hand parse of a command message agrees
// with encoding/json wherever it takes the message.
func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{
		`{"type":"command","id":"12.0.7","command":{"command":"user_message","type":"confirm","text":"hi"}}`,
		`{"type":"command","id":"12.0.7","command":{}}`,
		`{"type":"command","id":"a\"b","command":{}}`,
		`{"type":"command","id":"x","command":{},"id":"y"}`,
		`{"id":"3.0.1","type":"command","command":{"command":"reboot"}}`,
		`{"type":"other","id":"1"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		id, command, ok := parseCommand(data)
		var m serverMessage
		jsonOK := json.Unmarshal(data, &m) == nil && m.Type == "command"
		if !ok {
			if jsonOK {
				t.Fatalf("parseCommand refused %q, which encoding/json reads as a command", data)
			}
			return
		}
		if !jsonOK {
			return // a form only the hand parse takes: not one the server writes
		}
		if id != m.ID {
			t.Fatalf("parseCommand(%q): id %q, encoding/json %q", data, id, m.ID)
		}
		if wantsConfirm(command) != wantsConfirm(m.Command) {
			t.Fatalf("parseCommand(%q): confirm %v, encoding/json's command %v", data, wantsConfirm(command), wantsConfirm(m.Command))
		}
	})
}
