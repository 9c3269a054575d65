package readmodel

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/projections"
)

// churn makes changes of every kind on top of newListEnv's data, so that a
// replay has updates, removals and deletions to get right.
func churn(le *listEnv) {
	le.provider(domain.UpdateProvider{ID: 2, Name: domain.Some("Two!")})
	le.tariff(domain.UpdateTariff{ID: 12, Enabled: domain.Some(false)})
	le.tariff(domain.DeleteTariff{ID: 21})
	le.category(domain.CreateCategory{ID: 3, Name: "Kids"})
	le.channel(domain.CreateChannel{ID: 7, Name: "Cartoons", Number: 7, Categories: []int64{3}})
	le.admin(domain.DeleteAdmin{Login: "two"})
	le.account(domain.UpdateAccount{ID: le.acc1[0], Fullname: domain.Some("Renamed Person"), RegionTag: domain.Some[int64](4)})
	le.account(domain.DeleteAccount{ID: le.acc1[1]})
	le.account(domain.DeleteAccount{ID: le.acc2[0]})
	subs := le.m.AccountSubscriptions(le.acc1[2])
	le.account(domain.RemoveSubscription{AccountID: le.acc1[2], SubscriptionID: subs[0].ID})
	devs := le.m.AccountDevices(le.acc1[3])
	le.account(domain.UnbindDevice{AccountID: le.acc1[3], DeviceID: devs[0].ID})
	le.newAccount(2, "late", "Late Comer")
	// Device authorisation: connections, and `update` sends to a device,
	// an account and a provider, and a send without `update`.
	devs = le.m.AccountDevices(le.acc1[4])
	le.appendEvent(domain.DeviceStream(devs[0].ID), domain.DeviceConnected{DeviceID: devs[0].ID, Account: le.acc1[4], Provider: 1})
	le.issueUpdate(901, domain.RecipientDevices, []int64{devs[0].ID})
	le.issueUpdate(902, domain.RecipientAccounts, []int64{le.acc1[5], le.acc1[1]})
	le.issueUpdate(903, domain.RecipientProviders, []int64{2})
	le.issueUpdate(904, domain.RecipientProviders, []int64{1}, domain.CommandReinit)
}

// TestApplyIdempotent applies the whole log once to one model and twice,
// in overlapping batches, to another: the answers must be the same.
func TestApplyIdempotent(t *testing.T) {
	le := newListEnv(t)
	churn(le)
	le.r.sync()
	events := le.readAll(le.m)

	once := New(le.reg)
	if err := once.Apply(t.Context(), decoded(once, events), projections.Replay); err != nil {
		t.Fatal(err)
	}
	want := dump(t, once)
	sameAnswers(t, dump(t, le.m), want) // the runner-fed model agrees too

	twice := New(le.reg)
	half := len(events) / 2
	for _, batch := range [][]eventstore.RecordedEvent{events[:half+7], events[half-20:], events, events[3:9]} {
		if err := twice.Apply(t.Context(), decoded(twice, batch), projections.Replay); err != nil {
			t.Fatal(err)
		}
		if batch[len(batch)-1].Position == events[len(events)-1].Position {
			sameAnswers(t, want, dump(t, twice))
		}
	}
	sameAnswers(t, want, dump(t, twice))
}

// TestSnapshotThenTail takes a snapshot midway, makes more changes, then
// starts a model from the snapshot and the log after it: it must answer as
// a model that replayed the whole log. A model restored from the snapshot
// but resumed from an earlier position (the idempotent case) must too.
func TestSnapshotThenTail(t *testing.T) {
	le := newListEnv(t)
	path := filepath.Join(t.TempDir(), "readmodel.snap")
	pos, err := le.m.WriteSnapshot(path)
	if err != nil {
		t.Fatal(err)
	}
	if pos != le.m.Position() || pos.IsZero() {
		t.Fatalf("snapshot at %v, model at %v", pos, le.m.Position())
	}
	churn(le)
	le.r.sync()

	full := New(le.reg)
	le.run(full, Beginning).sync()
	want := dump(t, full)
	sameAnswers(t, want, dump(t, le.m))

	restored := New(le.reg)
	got, err := restored.LoadSnapshot(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != pos {
		t.Fatalf("loaded position %v, written %v", got, pos)
	}
	le.run(restored, got).sync()
	sameAnswers(t, want, dump(t, restored))

	early := New(le.reg)
	if _, err := early.LoadSnapshot(path); err != nil {
		t.Fatal(err)
	}
	le.run(early, eventstore.Position{Commit: pos.Commit / 2, Prepare: pos.Prepare / 2}).sync()
	sameAnswers(t, want, dump(t, early))
}

// TestSnapshotRoundTrip10k checks that every query answers the same after
// a snapshot of 10,000 accounts is written and loaded.
func TestSnapshotRoundTrip10k(t *testing.T) {
	m := New(nil)
	f := newFeed()
	applyTypical(t, m, f, 10000, 7)
	// Some variety: a deleted account, catalog entities, a null-able field
	// set to "", an unknown device class.
	apply := func(stream string, e domain.Event) {
		t.Helper()
		if err := m.Apply(t.Context(), decoded(m, []eventstore.RecordedEvent{f.record(stream, e, base)}), projections.Live); err != nil {
			t.Fatal(err)
		}
	}
	apply(domain.AccountStream(10), domain.AccountDeleted{AccountID: 10})
	apply(domain.AccountStream(11), domain.AccountUpdated{AccountID: 11, RemoteCustomField: domain.Some(""), DevicesPerAccountLimit: domain.Some(2)})
	apply(domain.AccountStream(12), domain.DeviceBound{AccountID: 12, DeviceID: 1 << 40, UniqueID: "x", Class: "vr-headset", Model: "Q"})
	apply(domain.ProviderStream(1), domain.ProviderCreated{ProviderID: 1, Name: "P", Enabled: true, FreeTariff: ptr(int64(3)),
		RegionTag: ptr(int64(4)), Comment: "c", LogoURL: "https://l"})
	apply(domain.TariffStream(3), domain.TariffCreated{TariffID: 3, Provider: 1, Name: "T", Channels: []int64{1, 2}, Tag: ptr(int64(5))})
	apply(domain.ChannelStream(1), domain.ChannelCreated{ChannelID: 1, Name: "C", Categories: []int64{}, TextName: "CC", Disabled: true, TimeShiftDepth: ptr(3)})
	apply(domain.CategoryStream(1), domain.CategoryCreated{CategoryID: 1, Name: "K"})
	apply(domain.TariffTagStream(5), domain.TariffTagCreated{TagID: 5, Provider: 1, Name: "G", Position: 2})
	apply(domain.TariffTagStream(6), domain.TariffTagCreated{TagID: 6, Provider: 1, Name: "Gone"})
	apply(domain.TariffTagStream(6), domain.TariffTagDeleted{TagID: 6})
	apply(domain.RegionStream(4), domain.RegionCreated{RegionID: 4, Name: "R"})
	apply(domain.DeviceTypeStream(2), domain.DeviceTypeCreated{DeviceTypeID: 2, Name: "stb"})
	apply(domain.AdminStream("root"), domain.AdminCreated{Login: "root", PasswordHash: bcryptLike("x")})
	before := dump(t, m)

	path := filepath.Join(t.TempDir(), "rm.snap")
	pos, err := m.WriteSnapshot(path)
	if err != nil {
		t.Fatal(err)
	}
	loaded := New(nil)
	got, err := loaded.LoadSnapshot(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != pos || got != m.Position() {
		t.Fatalf("position %v, want %v", got, pos)
	}
	sameAnswers(t, before, dump(t, loaded))
	if p, ok := loaded.AccountOwner(10); !ok || p != 10%7+1 {
		t.Errorf("owner of deleted account 10 after loading: %d, %v", p, ok)
	}
	if d, ok := loaded.Device(1 << 40); !ok || d.Class != "vr-headset" || d.Model != "Q" {
		t.Errorf("device of an unknown class: %+v, %v", d, ok)
	}

	// The tombstone survives: an old event of the deleted account changes
	// nothing.
	old := f.record("x", domain.AccountCreated{AccountID: 10, Provider: 1, Login: "zombie", PinMD5: "0123456789abcdef0123456789abcdef", Fullname: "Z"}, base)
	old.Stream, old.Revision = domain.AccountStream(10), 0
	if err := loaded.Apply(t.Context(), decoded(loaded, []eventstore.RecordedEvent{old}), projections.Replay); err != nil {
		t.Fatal(err)
	}
	if _, ok := loaded.Account(10); ok {
		t.Error("a deleted account came back after a snapshot")
	}
}

func TestLoadSnapshotErrors(t *testing.T) {
	dir := t.TempDir()
	m := New(nil)
	applyTypical(t, m, newFeed(), 10, 2)
	before := dump(t, m)

	if _, err := m.LoadSnapshot(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing snapshot: %v", err)
	}
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("not a snapshot at all, not even close to one"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.LoadSnapshot(garbage); !errors.Is(err, projections.ErrCorruptSnapshot) {
		t.Errorf("garbage snapshot: %v", err)
	}
	// A valid snapshot file of something else (another payload).
	foreign := filepath.Join(dir, "foreign")
	if err := projections.WriteSnapshot(foreign, eventstore.Position{Commit: 1, Prepare: 1}, func(w ioWriter) error {
		_, err := w.Write([]byte("OTHERPAYLOAD"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.LoadSnapshot(foreign); !errors.Is(err, errSnapshotFormat) || !errors.Is(err, projections.ErrCorruptSnapshot) {
		t.Errorf("foreign snapshot: %v", err)
	}
	sameAnswers(t, before, dump(t, m))
}

// TestUnknownAndBadEvents: unknown event types are skipped and counted;
// data that does not decode stops Apply with an error, the model left at
// the event before.
func TestUnknownAndBadEvents(t *testing.T) {
	m := New(nil)
	f := newFeed()
	good := f.record(domain.ProviderStream(1), domain.ProviderCreated{ProviderID: 1, Name: "P", Enabled: true}, base)
	unknown := f.record(domain.ProviderStream(1), domain.ProviderCreated{ProviderID: 1, Name: "P"}, base)
	unknown.Type = "ProviderRebranded.v1"
	bad := f.record(domain.ProviderStream(1), domain.ProviderUpdated{ProviderID: 1}, base)
	bad.Data = []byte(`{"provider_id":"one"}`)
	other := f.record("ids-account", domain.ProviderCreated{ProviderID: 9, Name: "X"}, base)

	err := m.Apply(t.Context(), decoded(m, []eventstore.RecordedEvent{good, unknown, other, bad}), projections.Live)
	if err == nil || !errors.Is(err, domain.ErrInvalidEventData) {
		t.Fatalf("Apply of bad data: %v", err)
	}
	if _, ok := m.Provider(1); !ok {
		t.Error("the good event before the bad one was not applied")
	}
	if _, ok := m.Provider(9); ok {
		t.Error("an event of a bookkeeping stream was applied")
	}
	if st := m.Stats(); st.Skipped != 1 || st.Position != other.Position {
		t.Errorf("stats %+v; want 1 skipped, position %v", st, other.Position)
	}
	if f := m.Filter(); f.Match("ids-account", "IDBlockReserved.v1") || f.Match("login-1-x", "ReservationTaken.v1") ||
		f.Match("idem-abc", "IdempotencyStarted.v1") || !f.Match("account-1", domain.AccountCreatedType) || !f.Match("admin-root", domain.AdminCreatedType) {
		t.Errorf("filter %+v", f)
	}
}

// TestConcurrentReaders runs queries while events are applied (for the
// race detector) and checks that a reader never sees an account half
// applied: its devices and the device index agree. Each reader pauses a
// millisecond between rounds: four readers spinning on a two-core machine
// left the writer a fifth of the processors, which only made the test slow.
func TestConcurrentReaders(t *testing.T) {
	m := New(nil)
	f := newFeed()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var rounds atomic.Int64
	for r := range 4 {
		wg.Go(func() {
			for ; ctx.Err() == nil; time.Sleep(time.Millisecond) {
				rounds.Add(1)
				l := must(m.ListAccounts(AccountQuery{Scope: AllProviders, QuickSearch: "user", Page: Page{Limit: 50, Sort: []SortKey{{Field: "login", Desc: r%2 == 0}}}}))
				for a := range l.Items {
					if a.Login == "" {
						t.Error("empty login")
					}
				}
				for d := range must(m.ListDevices(DeviceQuery{Scope: ProviderScope(1), Page: Page{Limit: 20}})).Items {
					if d.Provider != 1 {
						t.Error("device of another provider")
					}
				}
				if a, ok := m.AccountState(int64(r + 2)); ok {
					for _, d := range a.Devices {
						if _, ok := m.DeviceByUniqueID(d.UniqueID); !ok {
							// The device may have been unbound since: check
							// it is really gone.
							if now, ok := m.AccountState(a.ID); ok && slicesContainsDevice(now.Devices, d.ID) {
								t.Errorf("device %d of account %d not indexed", d.ID, a.ID)
							}
						}
					}
				}
			}
		})
	}
	applyTypical(t, m, f, 2000, 2)
	cancel()
	wg.Wait()
	t.Logf("%d rounds of reads while events were applied", rounds.Load())
	if rounds.Load() < 8 {
		t.Errorf("the readers ran %d rounds while events were applied: too few to overlap them", rounds.Load())
	}
}

func slicesContainsDevice(ds []domain.Device, id int64) bool {
	for _, d := range ds {
		if d.ID == id {
			return true
		}
	}
	return false
}

// TestDecodeDamagedPayload feeds decodeState truncated and altered copies
// of a payload (past the snapshot file's checksum, as a writer bug would):
// it must fail cleanly, never panic or hang.
func TestDecodeDamagedPayload(t *testing.T) {
	m := New(nil)
	applyTypical(t, m, newFeed(), 50, 3)
	var buf bytes.Buffer
	if err := m.capture().encode(&buf); err != nil {
		t.Fatal(err)
	}
	payload := buf.Bytes()
	if _, err := decodeState(bytes.NewReader(payload), nil); err != nil {
		t.Fatalf("intact payload: %v", err)
	}
	for n := 0; n < len(payload); n += 1 + n/7 {
		if _, err := decodeState(bytes.NewReader(payload[:n]), nil); !errors.Is(err, errSnapshotFormat) {
			t.Fatalf("payload cut at %d of %d: %v", n, len(payload), err)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 1000 {
		damaged := bytes.Clone(payload)
		for range 1 + rng.IntN(3) {
			damaged[rng.IntN(len(damaged))] ^= byte(1 + rng.IntN(255))
		}
		_, _ = decodeState(bytes.NewReader(damaged), nil) // any outcome but a panic
	}
}
