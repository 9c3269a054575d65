package domain_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"tvsm/domain"
)

// sampleEvents holds one event of every registered type, with as many
// fields set (and set to null) as the type allows.
func sampleEvents() []domain.Event {
	now := time.Date(2026, 3, 4, 5, 6, 7, 890, time.UTC)
	return []domain.Event{
		providerWithBilling,
		domain.ProviderUpdated{ProviderID: 7, Name: domain.Some("n"), Enabled: domain.Some(false), DevicesPerAccountLimit: domain.Null[int](),
			FreeTariff: domain.Some[int64](3), RegionTag: domain.Null[int64](), Comment: domain.Some(""), LogoURL: domain.Some("http://l"),
			BillingResolve: domain.Some(true), BillingURL: domain.Some("http://b"), BillingToken: domain.Some("")},
		domain.ProviderDeleted{ProviderID: 7},
		tariffCreated,
		domain.TariffUpdated{TariffID: 5, Name: domain.Some("n"), Enabled: domain.Some(true), Channels: domain.Some([]int64{}), Description: domain.Some(""),
			Tag: domain.Null[int64]()},
		domain.TariffDeleted{TariffID: 5},
		channelCreated,
		domain.ChannelUpdated{ChannelID: 3, Name: domain.Some("n"), Number: domain.Some(0), LogoURL: domain.Some(""), Description: domain.Some("d"), Categories: domain.Some([]int64{2}),
			TextName: domain.Some("t"), Enabled: domain.Some(false), TimeShiftDepth: domain.Null[int]()},
		domain.ChannelDeleted{ChannelID: 3},
		domain.CategoryCreated{CategoryID: 1, Name: "News"},
		domain.CategoryRenamed{CategoryID: 1, Name: "Sport"},
		domain.CategoryDeleted{CategoryID: 1},
		domain.TariffTagCreated{TagID: 4, Provider: 7, Name: "Sport", Position: 3},
		domain.TariffTagUpdated{TagID: 4, Name: domain.Some("n"), Enabled: domain.Some(true), Position: domain.Some(0)},
		domain.TariffTagDeleted{TagID: 4},
		domain.RegionCreated{RegionID: 2, Name: "North"},
		domain.RegionRenamed{RegionID: 2, Name: "South"},
		domain.RegionDeleted{RegionID: 2},
		domain.DeviceTypeCreated{DeviceTypeID: 3, Name: "tvip_s605"},
		domain.DeviceTypeRenamed{DeviceTypeID: 3, Name: "tv"},
		domain.DeviceTypeDeleted{DeviceTypeID: 3},
		domain.AdminCreated{Login: "root", PasswordHash: hash1, Provider: ptr[int64](7)},
		domain.AdminPasswordChanged{Login: "root", PasswordHash: hash2},
		domain.AdminScopeChanged{Login: "root"},
		domain.AdminDeleted{Login: "root"},
		domain.AdminSignedOut{Login: "root", Session: "c2Vzc2lvbi1pZC0xMjM0", Until: now.Add(time.Hour).Truncate(time.Second), At: now},
		domain.AccountCreated{AccountID: 42, Provider: 7, Login: "a", PinMD5: pin, Fullname: "f", RemoteCustomField: ptr(""),
			ContractInfo: ptr("c"), MainAddress: ptr("m"), AccountDesc: ptr("d"), RegionTag: ptr[int64](4), DevicesPerAccountLimit: ptr(0)},
		domain.AccountUpdated{AccountID: 42, Enabled: domain.Some(false), Login: domain.Some("b"), PinMD5: domain.Some(pin), Fullname: domain.Some("g"),
			RemoteCustomField: domain.Null[string](), ContractInfo: domain.Some(""), MainAddress: domain.Null[string](), AccountDesc: domain.Some("x"),
			RegionTag: domain.Null[int64](), DevicesPerAccountLimit: domain.Some(0)},
		domain.AccountDeleted{AccountID: 42},
		domain.SubscriptionAdded{AccountID: 42, SubscriptionID: 1, Tariff: 5, Start: now, Stop: ptr(now.Add(time.Hour)), Device: 1, TimeShiftDepth: ptr(72)},
		domain.SubscriptionChanged{AccountID: 42, SubscriptionID: 1, Tariff: domain.Some[int64](6), Start: domain.Some(now), Stop: domain.Null[time.Time](),
			TimeShiftDepth: domain.Some(24)},
		domain.SubscriptionRemoved{AccountID: 42, SubscriptionID: 1},
		device1,
		domain.DeviceBound{AccountID: 42, DeviceID: 3, UniqueID: "00:1a:79:00:00:01", Class: domain.DeviceSTB, MAC: ptr("00:1a:79:00:00:01"),
			RemoteCustomField: ptr("r"), Comment: ptr("c"), UseNAT: true, UdpxyAddr: ptr("10.0.0.1:4022"), DeviceType: ptr[int64](2)},
		domain.DeviceChanged{AccountID: 42, DeviceID: 3, MAC: domain.Null[string](), RemoteCustomField: domain.Some("r2"), Comment: domain.Null[string](),
			UseNAT: domain.Some(false), UdpxyAddr: domain.Some("udpxy:81"), DeviceType: domain.Null[int64]()},
		domain.DeviceUnbound{AccountID: 42, DeviceID: 1, UniqueID: "stb-1"},
		domain.AccountErased{AccountID: 42, WasDeleted: true},
		domain.AccountNetworkAdded{Provider: 7, NetworkID: 1, Network: "10.1.0.0/16", Account: 42, Description: ptr("office")},
		domain.AccountNetworkChanged{Provider: 7, NetworkID: 1, Network: domain.Some("10.2.0.0/16"), Account: domain.Some[int64](43), Description: domain.Null[string](),
			Owner: 43},
		domain.AccountNetworkRemoved{Provider: 7, NetworkID: 1, Account: 43},
		domain.CommandsIssued{SendID: 9, Recipients: domain.RecipientAccounts, IDs: []int64{42}, Scope: ptr[int64](7), IssuedAt: now,
			Commands: []domain.IssuedCommand{{Kind: domain.CommandUserMessage, MessageType: domain.MessageConfirm, PostTime: now, TTL: now.Add(time.Hour),
				Object: json.RawMessage(`{"command":"user_message","type":"confirm","text":"hi"}`)}}},
		domain.CommandsSent{SendID: 9, Index: 0, Devices: []int64{1, 2}, Node: "n1"},
		domain.CommandExpired{SendID: 9, Index: 0},
		domain.CommandsAcked{SendID: 9, Index: 0, Devices: []int64{1}},
		domain.CommandsConfirmed{SendID: 9, Index: 0, Devices: []int64{1}},
		domain.DeviceConnected{DeviceID: 1, Account: 42, Provider: 7, Node: "n1", Address: "127.0.0.1"},
		domain.DeviceLoggedIn{DeviceID: 1, Account: 42, Provider: 7, Address: "192.0.2.7", Firmware: "3.1.4", OS: "Android 9"},
		domain.DeviceDisconnected{DeviceID: 1, Account: 42, Provider: 7, Node: "n1", Code: 1001, Reason: "shutdown", Seconds: 12},
		domain.ViewingReported{DeviceID: 1, Account: 42, Provider: 7, Class: domain.DeviceSTB,
			Sessions: []domain.ViewingSession{{Channel: 3, Mode: domain.ViewingDVR, Start: now, Seconds: 60}}},
		domain.BillingCalled{AccountID: 42, Provider: 7, DeviceID: 1, Route: "tariff", Method: "GET", Path: "/api/tariff/5", Status: 504, LatencyMS: 10000, Failure: "timeout"},
	}
}

func TestRegisterEvents(t *testing.T) {
	r := eventRegistry()
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range sampleEvents() {
		names = append(names, e.EventType())
		name, data, err := r.Encode(e)
		if err != nil {
			t.Errorf("Encode(%T): %v", e, err)
			continue
		}
		back, err := r.Decode(name, data)
		if err != nil || !reflect.DeepEqual(back, e) {
			t.Errorf("%s does not round-trip: %v\nbefore %#v\nafter  %#v\njson %s", name, err, e, back, data)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if got := r.Types(); !slices.Equal(got, names) {
		t.Errorf("registered %v\nsampled    %v", got, names)
	}
}

// TestEventsAreCompact pins the stored form of the most frequent events:
// absent fields are left out, null is written only when a field is cleared.
func TestEventsAreCompact(t *testing.T) {
	r := eventRegistry()
	tests := []struct {
		event domain.Event
		want  string
	}{
		{domain.AccountUpdated{AccountID: 42, Enabled: domain.Some(false)}, `{"account_id":42,"enabled":false}`},
		{domain.AccountUpdated{AccountID: 42, RegionTag: domain.Null[int64]()}, `{"account_id":42,"region_tag":null}`},
		{created, `{"account_id":42,"provider":7,"login":"alice","pin_md5":"` + pin + `","fullname":"Alice Smith","enabled":true}`},
		{sub1, `{"account_id":42,"subscription_id":1,"tariff":5,"start":"2026-01-01T00:00:00Z"}`},
		{domain.SubscriptionChanged{AccountID: 42, SubscriptionID: 1, Stop: domain.Null[time.Time]()}, `{"account_id":42,"subscription_id":1,"stop":null}`},
		{device2, `{"account_id":42,"device_id":2,"unique_id":"phone-2","class":"phone"}`},
		// Channels created before they could be disabled have no
		// "disabled": it is written only for a disabled one.
		{channelCreated, `{"channel_id":3,"name":"News 24","number":24,"logo_url":"https://cdn.example/24.png","categories":[1]}`},
		{domain.TariffUpdated{TariffID: 5, Tag: domain.Null[int64]()}, `{"tariff_id":5,"tag":null}`},
	}
	for _, tt := range tests {
		_, data, err := r.Encode(tt.event)
		if err != nil || string(data) != tt.want {
			t.Errorf("%s: %s, %v\nwant %s", tt.event.EventType(), data, err, tt.want)
		}
	}
}

func TestRegisterEventsTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Errorf("no panic")
		}
	}()
	domain.RegisterEvents(eventRegistry())
}

// TestDecidersGuardTheirState covers the programming errors every decider
// reports as plain errors (HTTP 500), never as domain refusals: a nil
// command and a command for another aggregate than the state's.
func TestDecidersGuardTheirState(t *testing.T) {
	now := day(1, 1)
	plain := func(name string, err error) {
		t.Helper()
		if err == nil || errors.Is(err, domain.ErrNotFound) || errors.Is(err, domain.ErrValidation) {
			t.Errorf("%s: error %v, want a plain error", name, err)
		}
	}
	pd := domain.ProviderDecider()
	_, err := pd.Decide(pd.Replay(providerCreated), domain.UpdateProvider{ID: 8}, now)
	plain("provider", err)
	_, err = pd.Decide(pd.Initial(), nil, now)
	plain("provider nil", err)
	td := domain.TariffDecider()
	_, err = td.Decide(td.Replay(tariffCreated), domain.DeleteTariff{ID: 6}, now)
	plain("tariff", err)
	_, err = td.Decide(td.Initial(), nil, now)
	plain("tariff nil", err)
	cd := domain.ChannelDecider()
	_, err = cd.Decide(cd.Replay(channelCreated), domain.DeleteChannel{ID: 4}, now)
	plain("channel", err)
	_, err = cd.Decide(cd.Initial(), nil, now)
	plain("channel nil", err)
	kd := domain.CategoryDecider()
	_, err = kd.Decide(kd.Replay(domain.CategoryCreated{CategoryID: 1, Name: "n"}), domain.DeleteCategory{ID: 2}, now)
	plain("category", err)
	_, err = kd.Decide(kd.Initial(), nil, now)
	plain("category nil", err)
	gd := domain.TariffTagDecider()
	_, err = gd.Decide(gd.Replay(tagCreated), domain.UpdateTariffTag{ID: 5}, now)
	plain("tariff tag", err)
	_, err = gd.Decide(gd.Initial(), nil, now)
	plain("tariff tag nil", err)
	rd := domain.RegionDecider()
	_, err = rd.Decide(rd.Replay(domain.RegionCreated{RegionID: 1, Name: "n"}), domain.UpdateRegion{ID: 2, Name: domain.Some("x")}, now)
	plain("region", err)
	_, err = rd.Decide(rd.Initial(), nil, now)
	plain("region nil", err)
	dd := domain.DeviceTypeDecider()
	_, err = dd.Decide(dd.Replay(domain.DeviceTypeCreated{DeviceTypeID: 1, Name: "n"}), domain.DeleteDeviceType{ID: 2}, now)
	plain("device type", err)
	_, err = dd.Decide(dd.Initial(), nil, now)
	plain("device type nil", err)
	ad := domain.AdminDecider()
	_, err = ad.Decide(ad.Replay(domain.AdminCreated{Login: "a", PasswordHash: hash1}), domain.DeleteAdmin{Login: "b"}, now)
	plain("admin", err)
	_, err = ad.Decide(ad.Initial(), nil, now)
	plain("admin nil", err)
	acc := domain.AccountDecider()
	_, err = acc.Decide(acc.Initial(), nil, now)
	plain("account nil", err)

	streams := map[string]interface{ Stream() string }{
		"tariff-5": domain.CreateTariff{ID: 5}, "channel-3": domain.UpdateChannel{ID: 3}, "category-1": domain.DeleteCategory{ID: 1},
		"admin-root": domain.ChangeAdminScope{Login: "root"}, "tariff_tag-4": domain.DeleteTariffTag{ID: 4},
		"region-2": domain.CreateRegion{ID: 2}, "device_type-3": domain.UpdateDeviceType{ID: 3},
	}
	for want, c := range streams {
		if got := c.Stream(); got != want {
			t.Errorf("%T.Stream() = %q, want %q", c, got, want)
		}
	}
}
