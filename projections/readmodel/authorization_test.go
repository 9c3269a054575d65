package readmodel

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"testing"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/projections"
)

// authEnv is a model fed by a runner with one provider, two accounts and
// three devices, for the authorisation checks.
type authEnv struct {
	*listEnv
	a1, a2     int64
	d1, d2, d3 int64 // d1, d2 of a1; d3 of a2
}

func newAuthEnv(t *testing.T) *authEnv {
	le := newListEnv(t)
	ae := &authEnv{listEnv: le, a1: le.acc1[0], a2: le.acc1[1]}
	ae.d1 = le.m.AccountDevices(ae.a1)[0].ID
	ae.d2 = le.nextID("device")
	le.account(domain.BindDevice{AccountID: ae.a1, DeviceID: ae.d2, UniqueID: "second", Class: domain.DeviceTV})
	ae.d3 = le.m.AccountDevices(ae.a2)[0].ID
	le.r.sync()
	return ae
}

// dropped reports, for each device, whether a token issued at since is
// revoked.
func (ae *authEnv) dropped(since uint64) [3]bool {
	return [3]bool{
		ae.m.AuthorizationDropped(ae.d1, ae.a1, 1, since),
		ae.m.AuthorizationDropped(ae.d2, ae.a1, 1, since),
		ae.m.AuthorizationDropped(ae.d3, ae.a2, 1, since),
	}
}

func (ae *authEnv) expect(since uint64, want [3]bool) {
	ae.t.Helper()
	if got := ae.dropped(since); got != want {
		ae.t.Fatalf("dropped after %d: %v, want %v", since, got, want)
	}
}

func TestUpdateDropsAuthorisation(t *testing.T) {
	ae := newAuthEnv(t)
	before := ae.m.Position().Commit
	ae.expect(before, [3]bool{})
	if d, ok := ae.m.AuthorizedDevice(ae.d2, ae.a1, 1, before); !ok || d.UniqueID != "second" || d.Class != domain.DeviceTV {
		t.Fatalf("AuthorizedDevice = %+v, %v", d, ok)
	}
	// Wrong account or provider in the token: refused.
	if !ae.m.AuthorizationDropped(ae.d1, ae.a2, 1, before) || !ae.m.AuthorizationDropped(ae.d1, ae.a1, 2, before) {
		t.Fatal("a token naming another account or provider passed")
	}

	// A send without `update` drops nothing.
	ae.issueUpdate(1, domain.RecipientProviders, []int64{1}, domain.CommandUserMessage, domain.CommandReinit)
	ae.r.sync()
	ae.expect(before, [3]bool{})

	// One device; tokens issued at or after the send's position pass.
	pos := ae.issueUpdate(2, domain.RecipientDevices, []int64{ae.d2, 999999}).Commit
	ae.r.sync()
	ae.expect(before, [3]bool{false, true, false})
	ae.expect(pos, [3]bool{})

	// One account: both of its devices.
	pos = ae.issueUpdate(3, domain.RecipientAccounts, []int64{ae.a1}, domain.CommandUserMessage, domain.CommandUpdate).Commit
	ae.r.sync()
	ae.expect(pos-1, [3]bool{true, true, false})
	ae.expect(pos, [3]bool{})

	// The provider: every device.
	pos = ae.issueUpdate(4, domain.RecipientProviders, []int64{1}).Commit
	ae.r.sync()
	ae.expect(pos-1, [3]bool{true, true, true})
	ae.expect(pos, [3]bool{})
	if ae.m.AuthorizationDropped(ae.le2Device(), ae.acc2[0], 2, pos-1) {
		t.Fatal("an update to provider 1 dropped a device of provider 2")
	}

	// Unbinding a device and deleting an account drop theirs for good.
	ae.account(domain.UnbindDevice{AccountID: ae.a1, DeviceID: ae.d1})
	ae.account(domain.DeleteAccount{ID: ae.a2})
	ae.r.sync()
	ae.expect(ae.m.Position().Commit, [3]bool{true, false, true})
}

func (ae *authEnv) le2Device() int64 { return ae.m.AccountDevices(ae.acc2[0])[0].ID }

// Connections and disconnections stamp the device's last online time;
// viewing reports and other command events never reach the model.
func TestDeviceConnectionsAndFilter(t *testing.T) {
	ae := newAuthEnv(t)
	if _, ok := ae.m.DeviceLastOnline(ae.d1); ok {
		t.Fatal("a device that never connected has a last connection")
	}
	ae.appendEvent(domain.DeviceStream(ae.d1), domain.DeviceConnected{DeviceID: ae.d1, Account: ae.a1, Provider: 1})
	ae.appendEvent(domain.DeviceStream(ae.d1), domain.ViewingReported{DeviceID: ae.d1, Account: ae.a1, Provider: 1, Class: domain.DeviceSTB,
		Sessions: []domain.ViewingSession{{Channel: 1, Mode: domain.ViewingLive, Start: base, Seconds: 60}}})
	ae.appendEvent(domain.DeviceStream(ae.d1), domain.DeviceDisconnected{DeviceID: ae.d1, Account: ae.a1, Provider: 1, Code: 1000})
	ae.appendEvent(domain.DeviceStream(424242), domain.DeviceConnected{DeviceID: 424242, Account: ae.a1, Provider: 1})
	ae.r.sync()
	at, ok := ae.m.DeviceLastOnline(ae.d1)
	if !ok || !at.After(base) || at.Nanosecond() != 0 {
		t.Fatalf("last connected %v, %v", at, ok)
	}
	if _, ok := ae.m.DeviceLastOnline(424242); ok {
		t.Fatal("a connection of an unknown device was kept")
	}
	if st := ae.m.Stats(); st.Skipped != 0 {
		t.Fatalf("skipped %d events", st.Skipped)
	}

	f := ae.m.Filter()
	for _, c := range []struct {
		stream, typ string
		want        bool
	}{
		{"command-1", domain.CommandsIssuedType, true},
		{"command-1", "CommandsIssued.v2", true}, // any version
		{"command-1", domain.CommandsSentType, false},
		{"command-1", domain.CommandExpiredType, false},
		{"receipt-1", domain.CommandsAckedType, false},
		{"device-1", domain.DeviceConnectedType, true},
		{"device-1", domain.DeviceDisconnectedType, true},
		{"device-1", domain.DeviceLoggedInType, true},
		{"networks-1", domain.AccountNetworkAddedType, true},
		{"device-1", domain.ViewingReportedType, false},
		{"account-1", domain.DeviceBoundType, true},
		{"ids-device", "IDBlockReserved.v1", false},
	} {
		if got := f.Match(c.stream, c.typ); got != c.want {
			t.Errorf("filter on %s %s: %v, want %v", c.stream, c.typ, got, c.want)
		}
	}
	// Apply passes over the ignored types even without the filter.
	viewing := newFeed().record(domain.DeviceStream(ae.d1), domain.ViewingReported{DeviceID: ae.d1}, base)
	if err := ae.m.Apply(t.Context(), decoded(ae.m, []eventstore.RecordedEvent{viewing}), projections.Live); err != nil {
		t.Fatal(err)
	}
	if st := ae.m.Stats(); st.Skipped != 0 {
		t.Fatalf("an ignored type was counted as unknown: %+v", st)
	}
}

// The authorisation state survives a snapshot, and a format 1 snapshot,
// taken without it, is refused.
func TestSnapshotKeepsAuthorisation(t *testing.T) {
	ae := newAuthEnv(t)
	ae.appendEvent(domain.DeviceStream(ae.d3), domain.DeviceConnected{DeviceID: ae.d3, Account: ae.a2, Provider: 1})
	pos := ae.issueUpdate(7, domain.RecipientDevices, []int64{ae.d1}).Commit
	ae.issueUpdate(8, domain.RecipientAccounts, []int64{ae.a2})
	ae.issueUpdate(9, domain.RecipientProviders, []int64{2})
	ae.r.sync()
	path := filepath.Join(t.TempDir(), "rm.snap")
	if _, err := ae.m.WriteSnapshot(path); err != nil {
		t.Fatal(err)
	}
	loaded := New(ae.reg)
	if _, err := loaded.LoadSnapshot(path); err != nil {
		t.Fatal(err)
	}
	sameAnswers(t, dump(t, ae.m), dump(t, loaded))
	if !loaded.AuthorizationDropped(ae.d1, ae.a1, 1, pos-1) || loaded.AuthorizationDropped(ae.d1, ae.a1, 1, pos) {
		t.Fatal("the device drop did not survive the snapshot")
	}
	if at, ok := loaded.DeviceLastOnline(ae.d3); !ok || at.Before(base) {
		t.Fatalf("last connection after loading: %v, %v", at, ok)
	}

	// A format 1 snapshot (no authorisation state) is refused.
	old := filepath.Join(t.TempDir(), "v1.snap")
	if err := projections.WriteSnapshot(old, ae.m.Position(), func(w ioWriter) error {
		_, err := w.Write(binary.AppendUvarint([]byte(snapMagic), 1))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(ae.reg).LoadSnapshot(old); !errors.Is(err, errSnapshotFormat) {
		t.Fatalf("format 1 snapshot: %v, want errSnapshotFormat", err)
	}
	// So is a format 2 one (no TVIP fields, no account networks).
	if err := projections.WriteSnapshot(old, ae.m.Position(), func(w ioWriter) error {
		_, err := w.Write(binary.AppendUvarint([]byte(snapMagic), 2))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(ae.reg).LoadSnapshot(old); !errors.Is(err, errSnapshotFormat) {
		t.Fatalf("format 2 snapshot: %v, want errSnapshotFormat", err)
	}
}
