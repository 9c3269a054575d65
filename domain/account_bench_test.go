package domain_test

import (
	"runtime"
	"testing"
	"unsafe"

	"tvsm/domain"
)

// typicalHistory is a typical account: created with two optional fields,
// one ended and one open subscription, two devices, one update.
func typicalHistory(id int64) []domain.Event {
	c := created
	c.AccountID = id
	c.RemoteCustomField = ptr("ext-000123")
	c.ContractInfo = ptr("contract 2026/000123")
	return []domain.Event{
		c,
		domain.SubscriptionAdded{AccountID: id, SubscriptionID: 1, Tariff: 5, Start: day(1, 1), Stop: ptr(day(2, 1))},
		domain.SubscriptionAdded{AccountID: id, SubscriptionID: 2, Tariff: 6, Start: day(2, 1)},
		domain.DeviceBound{AccountID: id, DeviceID: 1, UniqueID: "00:1A:79:00:00:01", Class: domain.DeviceSTB, Model: "MAG 524"},
		domain.DeviceBound{AccountID: id, DeviceID: 2, UniqueID: "a3f1c2d4-phone", Class: domain.DevicePhone, Model: "Pixel 8"},
		domain.AccountUpdated{AccountID: id, Fullname: domain.Some("Alice Jones")},
	}
}

// TestAccountFootprint keeps the state of a typical account well under the
// read model's budget of about 1 KB per account.
func TestAccountFootprint(t *testing.T) {
	const n = 20000
	d := domain.AccountDecider()
	r := eventRegistry()
	// Stored form of one history; decoding it afresh per account gives
	// every state its own strings, as replaying the log does.
	var stored [][2]string
	for _, e := range typicalHistory(42) {
		name, data, err := r.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, [2]string{name, string(data)})
	}
	accounts := make([]domain.Account, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range accounts {
		state := d.Initial()
		for _, s := range stored {
			e, err := r.Decode(s[0], []byte(s[1]))
			if err != nil {
				t.Fatal(err)
			}
			state = d.Evolve(state, e)
		}
		accounts[i] = state
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perAccount := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	t.Logf("Account struct %d bytes; about %d heap bytes per typical account", unsafe.Sizeof(domain.Account{}), perAccount)
	if perAccount > 1024 {
		t.Errorf("a typical account takes %d bytes, want at most 1024", perAccount)
	}
	runtime.KeepAlive(accounts)
}

func BenchmarkAccountReplay(b *testing.B) {
	d := domain.AccountDecider()
	history := typicalHistory(42)
	b.ReportAllocs()
	for b.Loop() {
		_ = d.Replay(history...)
	}
}

func BenchmarkAccountDecideNoOpUpdate(b *testing.B) {
	d := domain.AccountDecider()
	state := d.Replay(typicalHistory(42)...)
	cmd := domain.UpdateAccount{ID: 42, Enabled: domain.Some(true), Login: domain.Some("alice"), Fullname: domain.Some("Alice Jones"),
		Provider: domain.Some[int64](7), RemoteCustomField: domain.Some("ext-000123"), RegionTag: domain.Null[int64]()}
	b.ReportAllocs()
	for b.Loop() {
		if events, err := d.Decide(state, cmd, day(1, 1)); err != nil || len(events) > 0 {
			b.Fatal(events, err)
		}
	}
}
