package domain_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"tvsm/domain"
)

func TestMetadataRoundTrip(t *testing.T) {
	moscow := time.FixedZone("MSK", 3*3600)
	env := domain.Envelope{
		Event:      accountDisabled{},
		OccurredAt: time.Date(2026, 11, 22, 20, 59, 41, 123456789, moscow),
		Actor:      domain.AdminActor("alice"),
		RequestID:  "req-1",
	}
	data, err := domain.EncodeMetadata(env)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"occurred_at":"2026-11-22T17:59:41.123456789Z","actor":"admin:alice","request_id":"req-1"}`; string(data) != want {
		t.Errorf("EncodeMetadata = %s, want %s", data, want)
	}
	m, err := domain.DecodeMetadata(data)
	if err != nil {
		t.Fatal(err)
	}
	if !m.OccurredAt.Equal(env.OccurredAt) || m.OccurredAt.Location() != time.UTC {
		t.Errorf("OccurredAt = %v, want %v in UTC", m.OccurredAt, env.OccurredAt)
	}
	if m.Actor != env.Actor || m.RequestID != env.RequestID {
		t.Errorf("DecodeMetadata = %#v, want %#v", m, env.Metadata())
	}
}

func TestMetadataFixedWidthTime(t *testing.T) {
	env := domain.Envelope{OccurredAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Actor: domain.SystemActor(), RequestID: "r"}
	data, err := domain.EncodeMetadata(env)
	if err != nil || !strings.Contains(string(data), `"2026-01-02T03:04:05.000000000Z"`) {
		t.Errorf("EncodeMetadata = %s, %v", data, err)
	}
}

func TestDecodeMetadataAccepts(t *testing.T) {
	want := domain.Metadata{OccurredAt: time.Date(2026, 11, 22, 17, 59, 41, 0, time.UTC), Actor: domain.DeviceActor(42), RequestID: "r"}
	for _, at := range []string{"2026-11-22T17:59:41Z", "2026-11-22T20:59:41+03:00", "2026-11-22T17:59:41.000Z"} {
		data := `{"occurred_at":"` + at + `","actor":"device:42","request_id":"r","causation_id":"later"}`
		m, err := domain.DecodeMetadata([]byte(data))
		if err != nil {
			t.Errorf("DecodeMetadata(%s): %v", data, err)
			continue
		}
		if m != want {
			t.Errorf("DecodeMetadata(%s) = %#v, want %#v", data, m, want)
		}
	}
}

func TestDecodeMetadataRejects(t *testing.T) {
	const ok = `"occurred_at":"2026-11-22T17:59:41Z","actor":"system","request_id":"r"`
	tests := []struct{ data, mention string }{
		{``, "object"},
		{`null`, "object"},
		{`[]`, "object"},
		{`{` + ok, ""},
		{`{"actor":"system","request_id":"r"}`, "occurred_at"},
		{`{"occurred_at":"yesterday","actor":"system","request_id":"r"}`, "occurred_at"},
		{`{"occurred_at":"2026-11-22 17:59:41Z","actor":"system","request_id":"r"}`, "occurred_at"},
		{`{"occurred_at":"2026-13-22T17:59:41Z","actor":"system","request_id":"r"}`, "occurred_at"},
		{`{"occurred_at":1790000000,"actor":"system","request_id":"r"}`, ""},
		{`{"occurred_at":"0001-01-01T00:00:00Z","actor":"system","request_id":"r"}`, "occurred_at"},
		{`{"occurred_at":"0000-01-01T00:30:00+01:00","actor":"system","request_id":"r"}`, "occurred_at"},
		{`{"occurred_at":"2026-11-22T17:59:41Z","request_id":"r"}`, "actor"},
		{`{"occurred_at":"2026-11-22T17:59:41Z","actor":"robot","request_id":"r"}`, "actor"},
		{`{"occurred_at":"2026-11-22T17:59:41Z","actor":"system"}`, "request_id"},
		{`{"occurred_at":"2026-11-22T17:59:41Z","actor":"system","request_id":"a b"}`, "request_id"},
	}
	for _, tt := range tests {
		_, err := domain.DecodeMetadata([]byte(tt.data))
		if !errors.Is(err, domain.ErrInvalidMetadata) || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("DecodeMetadata(%s) = %v, want ErrInvalidMetadata mentioning %q", tt.data, err, tt.mention)
		}
	}
}

func TestEncodeMetadataRejects(t *testing.T) {
	good := domain.Envelope{OccurredAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Actor: domain.SystemActor(), RequestID: "r"}
	bad := map[string]func(*domain.Envelope){
		"zero time":        func(e *domain.Envelope) { e.OccurredAt = time.Time{} },
		"year 10000":       func(e *domain.Envelope) { e.OccurredAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) },
		"zero actor":       func(e *domain.Envelope) { e.Actor = domain.Actor{} },
		"no request id":    func(e *domain.Envelope) { e.RequestID = "" },
		"long request id":  func(e *domain.Envelope) { e.RequestID = strings.Repeat("r", domain.MaxRequestIDLen+1) },
		"request id ctrl":  func(e *domain.Envelope) { e.RequestID = "r\n" },
		"request id utf-8": func(e *domain.Envelope) { e.RequestID = "р" },
	}
	for name, mutate := range bad {
		env := good
		mutate(&env)
		if _, err := domain.EncodeMetadata(env); !errors.Is(err, domain.ErrInvalidMetadata) {
			t.Errorf("%s: EncodeMetadata = %v, want ErrInvalidMetadata", name, err)
		}
	}
	if _, err := domain.EncodeMetadata(good); err != nil {
		t.Errorf("good envelope: %v", err)
	}
}

func TestMetadataWrap(t *testing.T) {
	m := domain.Metadata{OccurredAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Actor: domain.SystemActor(), RequestID: "r"}
	envs := m.Wrap(accountDisabled{}, accountRenamed{Name: "x"})
	if len(envs) != 2 || envs[1].Event != (accountRenamed{Name: "x"}) || envs[0].Metadata() != m || envs[1].Metadata() != m {
		t.Errorf("Wrap = %#v", envs)
	}
}

func FuzzDecodeMetadata(f *testing.F) {
	for _, s := range []string{
		`{"occurred_at":"2026-11-22T17:59:41.123456789Z","actor":"admin:alice","request_id":"r-1"}`,
		`{"occurred_at":"2026-11-22T20:59:41+03:00","actor":"device:42","request_id":"x","extra":1}`,
		`{"occurred_at":"0000-01-01T00:00:00+01:00","actor":"system","request_id":"r"}`,
		`{"occurred_at":"9999-12-31T23:59:59-23:59","actor":"system","request_id":"r"}`,
		`null`, `{}`, ``, `{"occurred_at":7}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := domain.DecodeMetadata(data)
		if err != nil {
			if !errors.Is(err, domain.ErrInvalidMetadata) {
				t.Fatalf("error %v does not wrap ErrInvalidMetadata", err)
			}
			return
		}
		// Whatever decodes is valid: it re-encodes and decodes to itself.
		out, err := domain.EncodeMetadata(domain.Envelope{OccurredAt: m.OccurredAt, Actor: m.Actor, RequestID: m.RequestID})
		if err != nil {
			t.Fatalf("EncodeMetadata(%#v): %v", m, err)
		}
		back, err := domain.DecodeMetadata(out)
		if err != nil || back != m {
			t.Fatalf("round trip of %s: %#v, %v; want %#v", out, back, err, m)
		}
	})
}
