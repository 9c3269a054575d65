package domain_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"tvsm/domain"
)

func TestActorConstructors(t *testing.T) {
	tests := []struct {
		actor domain.Actor
		text  string
	}{
		{domain.AdminActor("alice"), "admin:alice"},
		{domain.AdminActor("ops:bob"), "admin:ops:bob"},
		{domain.AdminActor("Зоя"), "admin:Зоя"},
		{domain.DeviceActor(42), "device:42"},
		{domain.DeviceActor(9223372036854775807), "device:9223372036854775807"},
		{domain.SystemActor(), "system"},
	}
	for _, tt := range tests {
		if err := tt.actor.Validate(); err != nil {
			t.Errorf("%#v.Validate() = %v", tt.actor, err)
		}
		if got := tt.actor.String(); got != tt.text {
			t.Errorf("String() = %q, want %q", got, tt.text)
		}
		parsed, err := domain.ParseActor(tt.text)
		if err != nil || parsed != tt.actor {
			t.Errorf("ParseActor(%q) = %#v, %v; want %#v", tt.text, parsed, err, tt.actor)
		}
	}
	if id, ok := domain.DeviceActor(42).DeviceID(); !ok || id != 42 {
		t.Errorf("DeviceID() = %d, %v", id, ok)
	}
	if _, ok := domain.AdminActor("42").DeviceID(); ok {
		t.Error("admin actor has a DeviceID")
	}
}

func TestParseActorRejects(t *testing.T) {
	for _, s := range []string{
		"", "admin", "admin:", "device", "device:", "device:0", "device:-1", "device:042", "device:+4",
		"device:4x", "device:9223372036854775808", "system:", "system:cron", "user:alice", "Admin:alice",
		"admin:al ice", "admin:alice\n", "admin:\x00", "admin:\xff", ":alice", "admin:" + strings.Repeat("a", 257),
	} {
		if a, err := domain.ParseActor(s); !errors.Is(err, domain.ErrInvalidActor) {
			t.Errorf("ParseActor(%q) = %#v, %v; want ErrInvalidActor", s, a, err)
		}
	}
	for _, a := range []domain.Actor{{}, domain.DeviceActor(0), domain.DeviceActor(-3), domain.AdminActor(""), {Kind: domain.ActorSystem, ID: "x"}} {
		if err := a.Validate(); !errors.Is(err, domain.ErrInvalidActor) {
			t.Errorf("%#v.Validate() = %v, want ErrInvalidActor", a, err)
		}
	}
}

func TestActorJSON(t *testing.T) {
	in := struct{ By domain.Actor }{domain.DeviceActor(7)}
	data, err := json.Marshal(in)
	if err != nil || string(data) != `{"By":"device:7"}` {
		t.Fatalf("Marshal = %s, %v", data, err)
	}
	var out struct{ By domain.Actor }
	if err := json.Unmarshal(data, &out); err != nil || out != in {
		t.Errorf("Unmarshal = %#v, %v", out, err)
	}
	if _, err := json.Marshal(struct{ By domain.Actor }{}); !errors.Is(err, domain.ErrInvalidActor) {
		t.Errorf("Marshal of zero actor = %v, want ErrInvalidActor", err)
	}
	if err := json.Unmarshal([]byte(`{"By":"robot:1"}`), &out); !errors.Is(err, domain.ErrInvalidActor) {
		t.Errorf("Unmarshal of bad actor = %v, want ErrInvalidActor", err)
	}
}

func FuzzParseActor(f *testing.F) {
	for _, s := range []string{"admin:alice", "device:42", "system", "device:007", "admin:a:b", "system:x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := domain.ParseActor(s)
		if err != nil {
			return
		}
		if a.String() != s {
			t.Errorf("ParseActor(%q).String() = %q", s, a.String())
		}
		if err := a.Validate(); err != nil {
			t.Errorf("parsed actor %#v invalid: %v", a, err)
		}
	})
}
