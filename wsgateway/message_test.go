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
		{`{"id":"d3","type":"ack"}`, DeviceMessage{MessageAck, "d3"}, true},
		{`{"id":"d4","type":"confirm"}`, DeviceMessage{MessageConfirm, "d4"}, true},
		{`{"id":"d\u0035","type":"ack"}`, DeviceMessage{MessageAck, "d5"}, true},
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

// parseWithJSON is ParseDeviceMessage without its compact path.
func parseWithJSON(data []byte) (DeviceMessage, error) {
	var m DeviceMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return DeviceMessage{}, err
	}
	if m.Type != MessageAck && m.Type != MessageConfirm || m.ID == "" || len(m.ID) > maxIDLen {
		return DeviceMessage{}, ErrBadMessage
	}
	return m, nil
}

// FuzzParseDeviceMessage: whatever a device sends, ParseDeviceMessage
// answers it as encoding/json would, and its compact path takes only
// messages encoding/json decodes the same.
func FuzzParseDeviceMessage(f *testing.F) {
	for _, s := range []string{
		`{"type":"ack","id":"12.0.7"}`, `{"type":"confirm","id":"1.2.3"}`, `{"type":"ack","id":""}`,
		`{"type":"ack","id":"a\"b"}`, `{"type":"ack","id":"x","type":"confirm"}`, `{"type":"ack","id":"é"}`,
		`{"type":"ack","id":"x"} `, `{"Type":"ack","id":"x"}`, `{"type":"ack","id":"x"}"}`, `{"type":"ack","id":"\u0041"}`,
		`{"type":"ack","id":"` + strings.Repeat("9", maxIDLen) + `"}`,
		`{"id":"4.1.2","type":"ack"}`, `{"id":"4.1.2","type":"confirm"}`, `{"id":"a","type":"ack","id":"b","type":"ack"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseDeviceMessage(data)
		want, wantErr := parseWithJSON(data)
		if (err == nil) != (wantErr == nil) || got != want {
			t.Fatalf("ParseDeviceMessage(%q) = %+v, %v; encoding/json: %+v, %v", data, got, err, want, wantErr)
		}
		if err != nil && !errors.Is(err, ErrBadMessage) {
			t.Fatalf("error %v does not wrap ErrBadMessage", err)
		}
		if m, ok := parseCompactMessage(data); ok && m != want {
			t.Fatalf("compact path took %q as %+v; encoding/json: %+v", data, m, want)
		}
	})
}

// BenchmarkParseAck measures decoding a device's acknowledgement, as every
// delivery of a broadcast gets one, on the compact path and through
// encoding/json (the reference).
func BenchmarkParseAck(b *testing.B) {
	ack := []byte(`{"type":"ack","id":"1234567.0.98765"}`)
	b.Run("compact", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ParseDeviceMessage(ack); err != nil {
				b.Fatal(err)
			}
		}
	})
	idFirst := []byte(`{"id":"1234567.0.98765","type":"ack"}`)
	b.Run("compact-id-first", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ParseDeviceMessage(idFirst); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := parseWithJSON(ack); err != nil {
				b.Fatal(err)
			}
		}
	})
}
