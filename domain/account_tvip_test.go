package domain_test

import (
	"strings"
	"testing"

	"tvsm/domain"
	"tvsm/domain/domaintest"
)

// Specs of the TVIP device fields, device subscriptions and region ids.

var stbFields = domain.DeviceBound{AccountID: 42, DeviceID: 3, UniqueID: "00:1a:79:0a:bb:cc", Class: domain.DeviceSTB,
	MAC: ptr("00:1a:79:0a:bb:cc"), Comment: ptr("hall"), UseNAT: true, DeviceType: ptr[int64](4)}

func TestBindDeviceWithProviderFields(t *testing.T) {
	accountSpec().Run(t,
		accountCase{
			Name:  "a provider registers a device before it logs in: MAC normalised",
			Given: []domain.Event{created},
			When: domain.BindDevice{AccountID: 42, DeviceID: 3, UniqueID: "00:1a:79:0a:bb:cc", Class: domain.DeviceSTB,
				Fields: domain.DeviceFields{MAC: ptr("00-1A-79-0A-BB-CC"), Comment: ptr("hall"), UseNAT: true, DeviceType: ptr[int64](4)}},
			Then: []domain.Event{stbFields},
		},
		accountCase{
			Name:  "registering counts against the device limit",
			Given: []domain.Event{created, device1},
			When:  domain.BindDevice{AccountID: 42, DeviceID: 3, UniqueID: "x", Class: domain.DeviceSTB, ProviderLimit: ptr(1)},
			Err:   domain.ErrDeviceLimit,
		},
		accountCase{
			Name:  "bad provider fields are named",
			Given: []domain.Event{created},
			When: domain.BindDevice{AccountID: 42, DeviceID: 3, UniqueID: "x", Class: domain.DeviceSTB,
				Fields: domain.DeviceFields{MAC: ptr("00:1a:79"), UdpxyAddr: ptr(" a "), DeviceType: ptr[int64](0), Comment: ptr("\a")}},
			Err: domain.ErrValidation,
		},
	)
	err := decideErr(t, domain.AccountDecider(), domain.AccountCommand(domain.BindDevice{AccountID: 42, DeviceID: 3, UniqueID: "x",
		Class: domain.DeviceSTB, Fields: domain.DeviceFields{MAC: ptr("00:1a:79"), UdpxyAddr: ptr(" a "), DeviceType: ptr[int64](0),
			Comment: ptr("\a")}}), created)
	wantFields(t, err, "mac", "udpxy_addr", "device_type", "comment")
}

func TestChangeDevice(t *testing.T) {
	accountSpec().Run(t,
		accountCase{
			Name:  "only what changes is recorded; the MAC is normalised first",
			Given: []domain.Event{created, stbFields},
			When: domain.ChangeDevice{AccountID: 42, DeviceID: 3, UniqueID: domain.Some("00:1a:79:0a:bb:cc"), MAC: domain.Some("001A790ABBCC"),
				Comment: domain.Null[string](), UseNAT: domain.Some(true), UdpxyAddr: domain.Some("10.0.0.1:4022"), DeviceType: domain.Some[int64](4)},
			Then: []domain.Event{domain.DeviceChanged{AccountID: 42, DeviceID: 3, Comment: domain.Null[string](), UdpxyAddr: domain.Some("10.0.0.1:4022")}},
		},
		accountCase{
			Name:  "a whole record sent back changes nothing",
			Given: []domain.Event{created, stbFields},
			When: domain.ChangeDevice{AccountID: 42, DeviceID: 3, UniqueID: domain.Some("00:1a:79:0a:bb:cc"), MAC: domain.Some("00:1a:79:0a:bb:cc"),
				Comment: domain.Some("hall"), UseNAT: domain.Some(true), RemoteCustomField: domain.Null[string](), UdpxyAddr: domain.Null[string](),
				DeviceType: domain.Some[int64](4)},
			Then: nil,
		},
		accountCase{
			Name:  "the unique id cannot change",
			Given: []domain.Event{created, stbFields},
			When:  domain.ChangeDevice{AccountID: 42, DeviceID: 3, UniqueID: domain.Some("other")},
			Err:   domain.ErrValidation,
		},
		accountCase{
			Name:  "an unknown device",
			Given: []domain.Event{created},
			When:  domain.ChangeDevice{AccountID: 42, DeviceID: 3, Comment: domain.Some("x")},
			Err:   domain.ErrNotFound,
		},
	)
	d := domain.AccountDecider()
	state := d.Replay(created, stbFields, domain.DeviceChanged{AccountID: 42, DeviceID: 3, MAC: domain.Null[string](), UseNAT: domain.Some(false)})
	got, _ := state.Device(3)
	if got.MAC != nil || got.UseNAT || *got.Comment != "hall" || *got.DeviceType != 4 {
		t.Errorf("after DeviceChanged: %+v", got.DeviceFields)
	}
}

func TestDeviceSubscriptions(t *testing.T) {
	deviceSub := domain.SubscriptionAdded{AccountID: 42, SubscriptionID: 9, Tariff: 6, Start: day(1, 1), Device: 1, TimeShiftDepth: ptr(48)}
	accountSpec().Run(t,
		accountCase{
			Name:  "a bound device gets a subscription of its own",
			Given: []domain.Event{created, device1},
			When: domain.AddSubscription{AccountID: 42, SubscriptionID: 9, Tariff: 6, TariffProvider: 7, Start: day(1, 1), Device: 1,
				TimeShiftDepth: ptr(48)},
			Then: []domain.Event{deviceSub},
		},
		accountCase{
			Name:  "not for a device of another account",
			Given: []domain.Event{created},
			When:  domain.AddSubscription{AccountID: 42, SubscriptionID: 9, Tariff: 6, TariffProvider: 7, Start: day(1, 1), Device: 1},
			Err:   domain.ErrValidation,
		},
		accountCase{
			Name:  "unbinding the device ends its subscriptions first, each with its event",
			Given: []domain.Event{created, device1, device2, sub1, deviceSub},
			When:  domain.UnbindDevice{AccountID: 42, DeviceID: 1},
			Then: []domain.Event{domain.SubscriptionRemoved{AccountID: 42, SubscriptionID: 9},
				domain.DeviceUnbound{AccountID: 42, DeviceID: 1, UniqueID: "stb-1"}},
		},
		accountCase{
			Name:  "time_shift_depth changes alone",
			Given: []domain.Event{created, device1, deviceSub},
			When:  domain.UpdateSubscription{AccountID: 42, SubscriptionID: 9, TimeShiftDepth: domain.Some(72), Start: domain.Some(day(1, 1))},
			Then:  []domain.Event{domain.SubscriptionChanged{AccountID: 42, SubscriptionID: 9, TimeShiftDepth: domain.Some(72)}},
		},
		accountCase{
			Name:  "a negative time_shift_depth",
			Given: []domain.Event{created, sub1},
			When:  domain.UpdateSubscription{AccountID: 42, SubscriptionID: 1, TimeShiftDepth: domain.Some(-1)},
			Err:   domain.ErrValidation,
		},
	)

	// Services: the device's own subscription serves that device only.
	state := domain.AccountDecider().Replay(created, device1, device2, deviceSub)
	now := day(1, 2)
	switch {
	case state.ServicesAvailable(now):
		t.Error("the account has services through a device's subscription")
	case !state.DeviceServicesAvailable(1, now):
		t.Error("device 1 has no services through its own subscription")
	case state.DeviceServicesAvailable(2, now):
		t.Error("device 2 has services through device 1's subscription")
	}
	withOwn := domain.AccountDecider().Fold(state, sub1)
	if got := withOwn.DeviceActiveTariffs(1, now); len(got) != 2 || got[0] != 6 || got[1] != 5 {
		t.Errorf("device 1's tariffs %v, want [6 5]", got)
	}
	if got := withOwn.DeviceActiveTariffs(2, now); len(got) != 1 || got[0] != 5 {
		t.Errorf("device 2's tariffs %v, want [5]", got)
	}
}

func TestNormalizeMAC(t *testing.T) {
	for in, want := range map[string]string{
		"00:1A:79:0A:BB:CC": "00:1a:79:0a:bb:cc", "00-1a-79-0a-bb-cc": "00:1a:79:0a:bb:cc",
		"001a790abbcc": "00:1a:79:0a:bb:cc", "001a.790a.bbcc": "00:1a:79:0a:bb:cc",
	} {
		if got, err := domain.NormalizeMAC(in); err != nil || got != want {
			t.Errorf("NormalizeMAC(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "00:1a:79:0a:bb", "00:1a:79:0a:bb:cc:dd", "00:1a-79:0a:bb:cc", "001a:790a:bbcc", "0:01a:79:0a:bb:cc",
		"00:1a:79:0a:bb:cc:", ":00:1a:79:0a:bb:cc", "00:1a:79:0a:bb:cg", "001a.790abbcc", "00.1a.79.0a.bb.cc", " 00:1a:79:0a:bb:cc"} {
		if got, err := domain.NormalizeMAC(in); err == nil {
			t.Errorf("NormalizeMAC(%q) = %q, want an error", in, got)
		}
	}
}

// FuzzNormalizeMAC: whatever is accepted has the stored form, and the
// stored form is accepted as itself.
func FuzzNormalizeMAC(f *testing.F) {
	for _, s := range []string{"00:1A:79:0A:BB:CC", "001a.790a.bbcc", "00-1a-79-0a-bb-cc", "001a790abbcc", "::::::", "0:1:2:3:4:5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		mac, err := domain.NormalizeMAC(s)
		if err != nil {
			return
		}
		if len(mac) != 17 || strings.ToLower(mac) != mac {
			t.Fatalf("NormalizeMAC(%q) = %q", s, mac)
		}
		if again, err := domain.NormalizeMAC(mac); err != nil || again != mac {
			t.Fatalf("NormalizeMAC(%q) = %q, %v; not stable", mac, again, err)
		}
	})
}

// TestRegionTagUpcast: account events stored when region_tag was text read
// as ids where the text is one, and as no region otherwise.
func TestRegionTagUpcast(t *testing.T) {
	r := eventRegistry()
	const head = `{"account_id":42,"provider":7,"login":"alice","pin_md5":"` + pin + `","fullname":"Alice Smith","enabled":true`
	for data, want := range map[string]*int64{
		head + `,"region_tag":"12"}`:    ptr[int64](12),
		head + `,"region_tag":" 12 "}`:  ptr[int64](12),
		head + `,"region_tag":"north"}`: nil,
		head + `,"region_tag":"0"}`:     nil,
		head + `}`:                      nil,
	} {
		e, err := r.Decode("AccountCreated.v1", []byte(data))
		if err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		got := e.(domain.AccountCreated).RegionTag
		if (got == nil) != (want == nil) || got != nil && *got != *want {
			t.Errorf("%s: region_tag %v, want %v", data, got, want)
		}
		if e.(domain.AccountCreated).Login != "alice" {
			t.Errorf("%s: other fields lost: %+v", data, e)
		}
	}
	for data, want := range map[string]domain.Optional[int64]{
		`{"account_id":42,"region_tag":"5"}`:     domain.Some[int64](5),
		`{"account_id":42,"region_tag":"south"}`: domain.Null[int64](),
		`{"account_id":42,"region_tag":null}`:    domain.Null[int64](),
		`{"account_id":42,"enabled":false}`:      {},
	} {
		e, err := r.Decode("AccountUpdated.v1", []byte(data))
		if err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if got := e.(domain.AccountUpdated).RegionTag; got != want {
			t.Errorf("%s: region_tag %+v, want %+v", data, got, want)
		}
	}
	if _, err := r.Decode("AccountCreated.v1", []byte(head+`,"region_tag":7}`)); err == nil {
		t.Error("a version 1 region_tag that is not text decoded")
	}
}

type networkCase = domaintest.Case[domain.AccountNetworks, domain.NetworkCommand]

func TestAccountNetworks(t *testing.T) {
	added := domain.AccountNetworkAdded{Provider: 7, NetworkID: 1, Network: "10.1.0.0/16", Account: 42}
	v6 := domain.AccountNetworkAdded{Provider: 7, NetworkID: 2, Network: "2001:db8::/48", Account: 43, Description: ptr("v6")}
	tests := []struct {
		name  string
		given []domain.Event
		when  domain.NetworkCommand
		then  []domain.Event
		field string
	}{
		{"add", nil, domain.AddAccountNetwork{Provider: 7, ID: 1, Network: "10.1.0.0/16", Account: 42}, []domain.Event{added}, ""},
		{"a bare address is a /32", nil, domain.AddAccountNetwork{Provider: 7, ID: 3, Network: "192.0.2.7", Account: 42},
			[]domain.Event{domain.AccountNetworkAdded{Provider: 7, NetworkID: 3, Network: "192.0.2.7/32", Account: 42}}, ""},
		{"IPv4 written as IPv6", nil, domain.AddAccountNetwork{Provider: 7, ID: 3, Network: "::ffff:10.9.0.0/112", Account: 42},
			[]domain.Event{domain.AccountNetworkAdded{Provider: 7, NetworkID: 3, Network: "10.9.0.0/16", Account: 42}}, ""},
		{"host bits set", nil, domain.AddAccountNetwork{Provider: 7, ID: 3, Network: "10.1.2.3/16", Account: 42}, nil, "network"},
		{"not a network", nil, domain.AddAccountNetwork{Provider: 7, ID: 3, Network: "10.1.0.0/33", Account: 42}, nil, "network"},
		{"inside another", []domain.Event{added}, domain.AddAccountNetwork{Provider: 7, ID: 3, Network: "10.1.5.0/24", Account: 43}, nil, "network"},
		{"around another", []domain.Event{added}, domain.AddAccountNetwork{Provider: 7, ID: 3, Network: "10.0.0.0/8", Account: 43}, nil, "network"},
		{"beside another", []domain.Event{added, v6}, domain.AddAccountNetwork{Provider: 7, ID: 3, Network: "10.2.0.0/16", Account: 43},
			[]domain.Event{domain.AccountNetworkAdded{Provider: 7, NetworkID: 3, Network: "10.2.0.0/16", Account: 43}}, ""},
		{"move may overlap itself", []domain.Event{added}, domain.ChangeAccountNetwork{Provider: 7, ID: 1, Network: domain.Some("10.1.0.0/17")},
			[]domain.Event{domain.AccountNetworkChanged{Provider: 7, NetworkID: 1, Network: domain.Some("10.1.0.0/17"), Owner: 42}}, ""},
		{"a move names the new owner", []domain.Event{added}, domain.ChangeAccountNetwork{Provider: 7, ID: 1, Account: domain.Some[int64](44)},
			[]domain.Event{domain.AccountNetworkChanged{Provider: 7, NetworkID: 1, Account: domain.Some[int64](44), Owner: 44}}, ""},
		{"change into another", []domain.Event{added, v6}, domain.ChangeAccountNetwork{Provider: 7, ID: 2, Network: domain.Some("10.1.0.0/24")}, nil, "network"},
		{"re-send unchanged", []domain.Event{v6}, domain.ChangeAccountNetwork{Provider: 7, ID: 2, Network: domain.Some("2001:db8::/48"),
			Account: domain.Some[int64](43), Description: domain.Some("v6")}, nil, ""},
		{"network null", []domain.Event{v6}, domain.ChangeAccountNetwork{Provider: 7, ID: 2, Network: domain.Null[string]()}, nil, "network"},
		{"remove", []domain.Event{added}, domain.RemoveAccountNetwork{Provider: 7, ID: 1},
			[]domain.Event{domain.AccountNetworkRemoved{Provider: 7, NetworkID: 1, Account: 42}}, ""},
		{"remove the networks of a deleted account", []domain.Event{added, v6}, domain.RemoveAccountNetworks{Provider: 7, Account: 43},
			[]domain.Event{domain.AccountNetworkRemoved{Provider: 7, NetworkID: 2, Account: 43}}, ""},
	}
	d := domain.NetworksDecider()
	spec := domaintest.For(d).Codec(eventRegistry())
	for _, tt := range tests {
		if tt.field != "" {
			t.Run(tt.name, func(t *testing.T) { wantFields(t, decideErr(t, d, tt.when, tt.given...), tt.field) })
			continue
		}
		spec.Run(t, networkCase{Name: tt.name, Given: tt.given, When: tt.when, Then: tt.then})
	}
	spec.Run(t, networkCase{Name: "remove an unknown network", When: domain.RemoveAccountNetwork{Provider: 7, ID: 9}, Err: domain.ErrNotFound})
	state := d.Replay(added, v6, domain.AccountNetworkChanged{Provider: 7, NetworkID: 1, Account: domain.Some[int64](44)},
		domain.AccountNetworkRemoved{Provider: 7, NetworkID: 2})
	if n, ok := state.Network(1); !ok || n.Account != 44 || n.Network.String() != "10.1.0.0/16" || len(state.Networks) != 1 {
		t.Errorf("state %+v", state)
	}
}

// FuzzParseNetwork: an accepted network is masked and reads back as
// itself.
func FuzzParseNetwork(f *testing.F) {
	for _, s := range []string{"10.0.0.0/8", "10.1.2.3/8", "192.0.2.7", "::ffff:10.0.0.0/104", "2001:db8::/32", "fe80::1%eth0", "1.2.3.4/", "/8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := domain.ParseNetwork(s)
		if err != nil {
			return
		}
		if p.Masked() != p || p.Addr().Is4In6() {
			t.Fatalf("ParseNetwork(%q) = %s", s, p)
		}
		if again, err := domain.ParseNetwork(p.String()); err != nil || again != p {
			t.Fatalf("ParseNetwork(%q) = %s, %v; not stable", p, again, err)
		}
	})
}
