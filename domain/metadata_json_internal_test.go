package domain

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// The metadata JSON must stay what json.Marshal of metadataJSON wrote
// before appendMetadataJSON, and readMetadataJSON must read what
// json.Unmarshal reads.

// metadataJSONBefore is how EncodeMetadata wrote m before.
func metadataJSONBefore(m Metadata) []byte {
	data, err := json.Marshal(metadataJSON{OccurredAt: m.OccurredAt.UTC().Format(occurredAtLayout), Actor: m.Actor.String(), RequestID: m.RequestID})
	if err != nil {
		panic(err)
	}
	return data
}

// sameMetadataJSON fails unless valid m encodes as before and reads back as
// json.Unmarshal reads it.
func sameMetadataJSON(t *testing.T, m Metadata) {
	t.Helper()
	want := metadataJSONBefore(m)
	if got := appendMetadataJSON([]byte("x"), m); string(got) != "x"+string(want) {
		t.Fatalf("appendMetadataJSON(%#v) = %s, want x%s", m, got, want)
	}
	if !readsMetadataLikeJSON(t, want) {
		t.Fatalf("readMetadataJSON declined %s", want)
	}
}

// readsMetadataLikeJSON fails unless readMetadataJSON, when it accepts
// data, gives what json.Unmarshal gives. It reports whether it accepted.
func readsMetadataLikeJSON(t *testing.T, data []byte) bool {
	t.Helper()
	fast, ok := readMetadataJSON(data)
	if !ok {
		if fast != (metadataJSON{}) {
			t.Fatalf("readMetadataJSON(%q) declined with %#v, want the zero value", data, fast)
		}
		return false
	}
	var slow metadataJSON
	if err := json.Unmarshal(data, &slow); err != nil || !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q: encoding/json %#v (%v), fast %#v", data, slow, err, fast)
	}
	return true
}

func TestMetadataJSONAsBefore(t *testing.T) {
	at := time.Date(2026, 11, 22, 20, 59, 41, 123456789, time.FixedZone("MSK", 3*3600))
	for _, m := range []Metadata{
		{OccurredAt: at, Actor: AdminActor("alice"), RequestID: "req-1"},
		{OccurredAt: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), Actor: SystemActor(), RequestID: `<&>"\`},
		{OccurredAt: time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), Actor: DeviceActor(42), RequestID: "r"},
		{OccurredAt: at, Actor: AdminActor(`Зоя<&>"\:x`), RequestID: "0b9c2f4e-7d1a-4c3e-9f55-2a6b8d0e1f37"},
	} {
		if err := m.validate(); err != nil {
			t.Fatal(err)
		}
		sameMetadataJSON(t, m)
	}
}

func TestReadMetadataJSONOtherForms(t *testing.T) {
	const good = `{"occurred_at":"2026-11-22T17:59:41Z","actor":"system","request_id":"r"}`
	for data, want := range map[string]bool{
		good: true, `{"occurred_at":"x","actor":"","request_id":"\u0041"}`: true,
		` ` + good: false, good + ` `: false, `{"actor":"system","occurred_at":"2026-11-22T17:59:41Z","request_id":"r"}`: false,
		`{"occurred_at":"2026-11-22T17:59:41Z","actor":"system","request_id":"r","x":1}`: false,
		`{"occurred_at":"2026-11-22T17:59:41Z","actor":"system","request_id":null}`:      false, `{}`: false, ``: false,
	} {
		if got := readsMetadataLikeJSON(t, []byte(data)); got != want {
			t.Errorf("readMetadataJSON(%s) accepted %v, want %v", data, got, want)
		}
	}
}

func FuzzMetadataJSON(f *testing.F) {
	f.Add(int64(1795370381), int64(123456789), uint8(0), "alice", "req-1")
	f.Add(int64(-62135596800), int64(0), uint8(1), "42", "<&>")
	f.Add(int64(253402300799), int64(999999999), uint8(2), "", "r")
	f.Fuzz(func(t *testing.T, sec, nsec int64, kind uint8, id, requestID string) {
		kinds := []ActorKind{ActorAdmin, ActorDevice, ActorSystem}
		m := Metadata{OccurredAt: time.Unix(sec, nsec), Actor: Actor{Kind: kinds[int(kind)%len(kinds)], ID: id}, RequestID: requestID}
		if m.validate() != nil {
			return
		}
		sameMetadataJSON(t, m)
	})
}

func FuzzReadMetadataJSON(f *testing.F) {
	f.Add([]byte(`{"occurred_at":"2026-11-22T17:59:41.123456789Z","actor":"admin:alice","request_id":"r-1"}`))
	f.Add([]byte(`{"occurred_at":"x\u00e9","actor":"\"","request_id":""}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		readsMetadataLikeJSON(t, data)
	})
}
