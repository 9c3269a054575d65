package wsgateway

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseDeviceMessage(t *testing.T) {
	tests := []struct {
		in   string
		want DeviceMessage
		ok   bool
	}{
		{`{"type":"ack","id":"d1"}`, DeviceMessage{MessageAck, "d1"}, true},
		{`{"type":"confirm","id":"d2","extra":1}`, DeviceMessage{MessageConfirm, "d2"}, true},
		{`{"type":"command","id":"d1"}`, DeviceMessage{}, false},
		{`{"type":"ack"}`, DeviceMessage{}, false},
		{`{"type":"ack","id":"` + strings.Repeat("x", maxIDLen+1) + `"}`, DeviceMessage{}, false},
		{`not json`, DeviceMessage{}, false},
		{`[]`, DeviceMessage{}, false},
	}
	for _, tt := range tests {
		got, err := ParseDeviceMessage([]byte(tt.in))
		if tt.ok != (err == nil) || got != tt.want {
			t.Errorf("ParseDeviceMessage(%.40s) = %v, %v", tt.in, got, err)
		}
		if err != nil && !errors.Is(err, ErrBadMessage) {
			t.Errorf("error %v does not wrap ErrBadMessage", err)
		}
	}
}

func TestEncodeCommand(t *testing.T) {
	msg, err := EncodeCommand("del-1", json.RawMessage(`{"kind":"message","text":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"command","id":"del-1","command":{"kind":"message","text":"hi"}}`
	if string(msg) != want {
		t.Fatalf("got %s, want %s", msg, want)
	}
	if _, err := EncodeCommand("x", json.RawMessage(`{`)); err == nil {
		t.Fatal("invalid command accepted")
	}
}
