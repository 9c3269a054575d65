package wsgateway

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestCommandMessageMatchesEncodeCommand(t *testing.T) {
	cmd := json.RawMessage(`{"command":"user_message","text":"<b>&</b> \u00e9","n": 1}`)
	m, err := NewCommandMessage(cmd)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"12.0.345", "", `a"b`, "x<y", "é"} {
		want, err := EncodeCommand(id, cmd)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Encode(id); !bytes.Equal(got, want) {
			t.Errorf("Encode(%q) = %s, want %s", id, got, want)
		}
	}
	if _, err := NewCommandMessage(json.RawMessage(`{"a":`)); err == nil {
		t.Fatal("invalid command accepted")
	}
}

// FuzzCommandMessage checks that the spliced encoding is always what
// EncodeCommand gives, for any command and delivery id.
func FuzzCommandMessage(f *testing.F) {
	f.Add(`{"command":"reinit"}`, "1.0.2")
	f.Add(`{"text":"<script>"}`, `"quoted"`)
	f.Add(`{"x":[1,2,{"y":null}]}`, "\x00\u2028")
	f.Fuzz(func(t *testing.T, cmd, id string) {
		want, err := EncodeCommand(id, json.RawMessage(cmd))
		m, err2 := NewCommandMessage(json.RawMessage(cmd))
		if (err == nil) != (err2 == nil) {
			t.Fatalf("EncodeCommand err %v, NewCommandMessage err %v", err, err2)
		}
		if err != nil {
			return
		}
		if got := m.Encode(id); !bytes.Equal(got, want) {
			t.Fatalf("Encode(%q) = %s, want %s", id, got, want)
		}
	})
}
