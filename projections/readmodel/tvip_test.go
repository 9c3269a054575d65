package readmodel

import (
	"net/netip"
	"path/filepath"
	"testing"

	"tvsm/domain"
)

// The TVIP fields: device activity from logins and connections, the
// provider's device fields and their filters, device subscriptions, and
// account networks — each also after a snapshot round trip.

func TestDeviceActivity(t *testing.T) {
	le := newListEnv(t)
	acc := le.acc1[0]
	dev := le.m.AccountDevices(acc)[0].ID
	if d, _ := le.m.Device(dev); !d.FirstOnline.IsZero() || !d.LastOnline.IsZero() || d.Address != nil || d.Firmware != nil {
		t.Fatalf("a device that never logged in: %+v", d)
	}
	le.appendEvent(domain.DeviceStream(dev), domain.DeviceLoggedIn{DeviceID: dev, Account: acc, Provider: 1,
		Address: "192.0.2.10", Firmware: "3.1", OS: "Android 9"})
	le.appendEvent(domain.DeviceStream(dev), domain.DeviceConnected{DeviceID: dev, Account: acc, Provider: 1, Address: "2001:db8::7"})
	le.appendEvent(domain.DeviceStream(dev), domain.DeviceDisconnected{DeviceID: dev, Account: acc, Provider: 1, Code: 1000})
	le.r.sync()
	d, _ := le.m.Device(dev)
	switch {
	case d.FirstOnline.IsZero() || !d.LastOnline.After(d.FirstOnline):
		t.Errorf("first %v, last %v: want first < last", d.FirstOnline, d.LastOnline)
	case d.Address == nil || *d.Address != "2001:db8::7":
		t.Errorf("address %v, want the connection's", d.Address)
	case d.Firmware == nil || *d.Firmware != "3.1" || d.OS == nil || *d.OS != "Android 9":
		t.Errorf("firmware %v, os %v: want the login's", d.Firmware, d.OS)
	}
	a, _ := le.m.Account(acc)
	if !a.LastOnline.Equal(d.LastOnline) {
		t.Errorf("account last online %v, device %v", a.LastOnline, d.LastOnline)
	}

	// A login reported late (older than the last activity) does not
	// overwrite the address; it can move first_online back.
	late := d
	le.applyAt(dev, domain.DeviceLoggedIn{DeviceID: dev, Account: acc, Provider: 1, Address: "198.51.100.1", Firmware: "1.0"},
		d.FirstOnline.Unix()-60)
	d, _ = le.m.Device(dev)
	if *d.Address != *late.Address || *d.Firmware != "3.1" || d.FirstOnline.Unix() != late.FirstOnline.Unix()-60 || !d.LastOnline.Equal(late.LastOnline) {
		t.Errorf("after a late login: %+v", d)
	}

	// The provider's fields change; the activity stays.
	mac := "00-1A-79-00-00-99"
	le.account(domain.ChangeDevice{AccountID: acc, DeviceID: dev, MAC: domain.Some(mac), Comment: domain.Some("hall"), UseNAT: domain.Some(true),
		DeviceType: domain.Some[int64](3)})
	le.r.sync()
	d, _ = le.m.Device(dev)
	if d.MAC == nil || *d.MAC != "00:1a:79:00:00:99" || *d.Comment != "hall" || !d.UseNAT || *d.DeviceType != 3 || *d.Firmware != "3.1" {
		t.Errorf("after ChangeDevice: %+v %+v", d.Device, d)
	}
	check := func(m *Model) {
		t.Helper()
		for name, q := range map[string]DeviceQuery{
			"mac":          {MAC: "00:1a:79:00:00:99"},
			"quick mac":    {QuickSearch: "001A.7900.0099"},
			"quick addr":   {QuickSearch: "2001:DB8::7"},
			"quick text":   {QuickSearch: "HALL"},
			"device type":  {DeviceType: 3},
			"rcf and type": {DeviceType: 3, RemoteCustomField: nil},
		} {
			q.Scope = AllProviders
			l := must(m.ListDevices(q))
			if got := l.Slice(); l.Total != 1 || len(got) != 1 || got[0].ID != dev {
				t.Errorf("%s: %d devices %v, want only %d", name, l.Total, got, dev)
			}
		}
		if l := must(m.ListDevices(DeviceQuery{Scope: AllProviders, QuickSearch: "no such thing"})); l.Total != 0 {
			t.Errorf("a search matching nothing found %d", l.Total)
		}
	}
	check(le.m)
	path := filepath.Join(t.TempDir(), "rm.snap")
	if _, err := le.m.WriteSnapshot(path); err != nil {
		t.Fatal(err)
	}
	loaded := New(le.reg)
	if _, err := loaded.LoadSnapshot(path); err != nil {
		t.Fatal(err)
	}
	sameAnswers(t, dump(t, le.m), dump(t, loaded))
	check(loaded)
}

// applyAt applies a device stream event as if it happened at unix second
// at.
func (le *listEnv) applyAt(dev int64, e domain.Event, at int64) {
	le.m.mu.Lock()
	defer le.m.mu.Unlock()
	le.m.st.apply(&le.m.ev, &change{kind: domain.StreamDevice, id: dev, event: e, at: at})
}

func TestDeviceSubscriptionLists(t *testing.T) {
	le := newListEnv(t)
	acc := le.acc1[1]
	dev := le.m.AccountDevices(acc)[0].ID
	ds := le.nextID("subscription")
	le.account(domain.AddSubscription{AccountID: acc, SubscriptionID: ds, Tariff: 12, TariffProvider: 1, Start: base, Device: dev,
		TimeShiftDepth: ptr(24)})
	le.r.sync()
	own := must(le.m.ListSubscriptions(SubscriptionQuery{Scope: AllProviders, Account: acc}))
	devs := must(le.m.ListSubscriptions(SubscriptionQuery{Scope: ProviderScope(1), Devices: true}))
	byDevice := must(le.m.ListSubscriptions(SubscriptionQuery{Scope: AllProviders, Device: dev}))
	if own.Total != 1 || devs.Total != 1 || byDevice.Total != 1 {
		t.Fatalf("own %d, device subscriptions %d, of the device %d; want 1 each", own.Total, devs.Total, byDevice.Total)
	}
	if got := devs.Slice()[0]; got.ID != ds || got.Device != dev || *got.TimeShiftDepth != 24 {
		t.Errorf("device subscription %+v", got)
	}
	if l := must(le.m.ListSubscriptions(SubscriptionQuery{Scope: AllProviders})); l.Total != len(le.acc1)+len(le.acc2) {
		t.Errorf("all account subscriptions: %d, want %d (device subscriptions apart)", l.Total, len(le.acc1)+len(le.acc2))
	}
	login := must(le.m.ListSubscriptions(SubscriptionQuery{Scope: AllProviders, QuickSearch: "P1-USER01"}))
	if got := login.Slice(); login.Total != 1 || got[0].Account != acc {
		t.Errorf("quick search by login: %v", got)
	}
	byID := must(le.m.ListSubscriptions(SubscriptionQuery{Scope: AllProviders, Devices: true, QuickSearch: "12"}))
	if byID.Total != 1 {
		t.Errorf("quick search by tariff id among device subscriptions: %d", byID.Total)
	}
	// Unbinding the device removes its subscription.
	le.account(domain.UnbindDevice{AccountID: acc, DeviceID: dev})
	le.r.sync()
	if l := must(le.m.ListSubscriptions(SubscriptionQuery{Scope: AllProviders, Devices: true})); l.Total != 0 {
		t.Errorf("%d device subscriptions after the unbind", l.Total)
	}
	if _, ok := le.m.Subscription(ds); ok {
		t.Error("the device's subscription is still found by id")
	}
}

func TestAccountNetworkLookup(t *testing.T) {
	le := newListEnv(t)
	a, b := le.acc1[0], le.acc1[1]
	d := domain.NetworksDecider()
	stream := domain.NetworksStream(1)
	execute(le.env, stream, d, domain.NetworkCommand(domain.AddAccountNetwork{Provider: 1, ID: 1, Network: "10.1.0.0/16", Account: a}))
	execute(le.env, stream, d, domain.NetworkCommand(domain.AddAccountNetwork{Provider: 1, ID: 2, Network: "10.2.0.0/24", Account: b}))
	execute(le.env, stream, d, domain.NetworkCommand(domain.AddAccountNetwork{Provider: 1, ID: 3, Network: "2001:db8::/48", Account: b}))
	le.r.sync()
	check := func(m *Model) {
		t.Helper()
		for addr, want := range map[string]int64{
			"10.1.200.3": a, "10.2.0.255": b, "::ffff:10.1.0.1": a, "2001:db8:0:1::9": b,
			"10.2.1.0": 0, "10.0.255.255": 0, "9.9.9.9": 0, "2001:db9::1": 0,
		} {
			n, ok := m.NetworkByAddress(1, netip.MustParseAddr(addr))
			if got := map[bool]int64{true: n.Account}[ok]; got != want {
				t.Errorf("%s: account %d (%v), want %d", addr, got, ok, want)
			}
		}
		if _, ok := m.NetworkByAddress(2, netip.MustParseAddr("10.1.0.1")); ok {
			t.Error("another provider's network matched")
		}
		if l := must(m.ListNetworks(NetworkQuery{Scope: ProviderScope(1), Account: b})); l.Total != 2 {
			t.Errorf("networks of account b: %d", l.Total)
		}
		if l := must(m.ListNetworks(NetworkQuery{Scope: ProviderScope(2)})); l.Total != 0 {
			t.Errorf("provider 2 sees %d networks", l.Total)
		}
		if l := must(m.ListNetworks(NetworkQuery{Scope: AllProviders, QuickSearch: "10.2.0.77"})); l.Total != 1 || l.Slice()[0].ID != 2 {
			t.Errorf("searching an address: %+v", l.Slice())
		}
	}
	check(le.m)
	path := filepath.Join(t.TempDir(), "rm.snap")
	if _, err := le.m.WriteSnapshot(path); err != nil {
		t.Fatal(err)
	}
	loaded := New(le.reg)
	if _, err := loaded.LoadSnapshot(path); err != nil {
		t.Fatal(err)
	}
	check(loaded)
	// A deleted account's networks no longer authorise.
	le.account(domain.DeleteAccount{ID: a})
	le.r.sync()
	if _, ok := le.m.NetworkByAddress(1, netip.MustParseAddr("10.1.0.1")); ok {
		t.Error("a deleted account's network matched")
	}
}

func TestRegionAndUpdated(t *testing.T) {
	le := newListEnv(t)
	acc := le.acc1[2]
	before, _ := le.m.Account(acc)
	le.m.mu.Lock()
	le.m.st.apply(&le.m.ev, &change{kind: domain.StreamAccount, id: acc, rev: before.Revision + 1,
		event: domain.AccountUpdated{AccountID: acc, RegionTag: domain.Some[int64](9)}, at: before.Updated.Unix() + 100})
	le.m.mu.Unlock()
	after, _ := le.m.Account(acc)
	if after.RegionTag == nil || *after.RegionTag != 9 || after.Updated.Unix() != before.Updated.Unix()+100 || !after.Created.Equal(before.Created) {
		t.Errorf("before %+v\nafter %+v", before, after)
	}
	if l := must(le.m.ListAccounts(AccountQuery{Scope: AllProviders, RegionTag: 9})); l.Total != 1 || l.Slice()[0].ID != acc {
		t.Errorf("region filter: %d", l.Total)
	}
}
