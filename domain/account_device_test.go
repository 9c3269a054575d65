package domain_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"tvsm/domain"
)

var (
	device1 = domain.DeviceBound{AccountID: 42, DeviceID: 1, UniqueID: "stb-1", Class: domain.DeviceSTB, Model: "MAG 524"}
	device2 = domain.DeviceBound{AccountID: 42, DeviceID: 2, UniqueID: "phone-2", Class: domain.DevicePhone}
)

func bind(id int64, uid string, providerLimit *int) domain.BindDevice {
	return domain.BindDevice{AccountID: 42, DeviceID: id, UniqueID: uid, Class: domain.DeviceTV, Model: "TV", ProviderLimit: providerLimit}
}

func bound(id int64, uid string) domain.DeviceBound {
	return domain.DeviceBound{AccountID: 42, DeviceID: id, UniqueID: uid, Class: domain.DeviceTV, Model: "TV"}
}

func TestBindDevice(t *testing.T) {
	limited := created
	limited.DevicesPerAccountLimit = ptr(3)
	zero := created
	zero.DevicesPerAccountLimit = ptr(0)
	accountSpec().Run(t,
		accountCase{
			Name:  "first device",
			Given: []domain.Event{created},
			When:  domain.BindDevice{AccountID: 42, DeviceID: 1, UniqueID: "stb-1", Class: "STB", Model: "MAG 524"},
			Then:  []domain.Event{device1},
		},
		accountCase{
			Name:  "nil limits: unlimited",
			Given: []domain.Event{created, device1, device2},
			When:  bind(3, "tv-3", nil),
			Then:  []domain.Event{bound(3, "tv-3")},
		},
		accountCase{
			Name:  "below the provider limit",
			Given: []domain.Event{created, device1},
			When:  bind(3, "tv-3", ptr(2)),
			Then:  []domain.Event{bound(3, "tv-3")},
		},
		accountCase{
			Name:  "at the provider limit",
			Given: []domain.Event{created, device1, device2},
			When:  bind(3, "tv-3", ptr(2)),
			Err:   domain.ErrDeviceLimit,
		},
		accountCase{
			Name:  "the account limit overrides a lower provider limit",
			Given: []domain.Event{limited, device1, device2},
			When:  bind(3, "tv-3", ptr(2)),
			Then:  []domain.Event{bound(3, "tv-3")},
		},
		accountCase{
			Name:  "the account limit overrides an unlimited provider",
			Given: []domain.Event{limited, device1, device2, bound(3, "tv-3")},
			When:  bind(4, "tv-4", nil),
			Err:   domain.ErrDeviceLimit,
		},
		accountCase{
			Name:  "limit zero allows no device",
			Given: []domain.Event{zero},
			When:  bind(1, "tv-1", nil),
			Err:   domain.ErrDeviceLimit,
		},
		accountCase{
			Name:  "re-binding a bound unique id emits nothing, even at the limit",
			Given: []domain.Event{created, device1, device2},
			When:  domain.BindDevice{AccountID: 42, DeviceID: 77, UniqueID: "stb-1", Class: domain.DeviceSTB, ProviderLimit: ptr(2)},
		},
		accountCase{
			Name:  "device id already used",
			Given: []domain.Event{created, device1},
			When:  bind(1, "other", nil),
			Err:   domain.ErrAlreadyExists,
		},
		accountCase{
			Name:  "unbind",
			Given: []domain.Event{created, device1, device2},
			When:  domain.UnbindDevice{AccountID: 42, DeviceID: 1},
			Then:  []domain.Event{domain.DeviceUnbound{AccountID: 42, DeviceID: 1, UniqueID: "stb-1"}},
		},
		accountCase{
			Name:  "unbind unknown device",
			Given: []domain.Event{created, device1},
			When:  domain.UnbindDevice{AccountID: 42, DeviceID: 2},
			Err:   domain.ErrNotFound,
		},
		accountCase{
			Name:  "unbinding frees a place",
			Given: []domain.Event{created, device1, device2, domain.DeviceUnbound{AccountID: 42, DeviceID: 1, UniqueID: "stb-1"}},
			When:  bind(3, "tv-3", ptr(2)),
			Then:  []domain.Event{bound(3, "tv-3")},
		},
	)
}

func TestDeviceLimitError(t *testing.T) {
	d := domain.AccountDecider()
	given := []domain.Event{created, device1, device2}
	err := decideErr(t, d, domain.AccountCommand(bind(3, "tv-3", ptr(2))), given...)
	var le *domain.DeviceLimitError
	if !errors.As(err, &le) {
		t.Fatalf("error %v (%T), want *DeviceLimitError", err, err)
	}
	want := []domain.Device{
		{ID: 1, UniqueID: "stb-1", Class: domain.DeviceSTB, Model: "MAG 524"},
		{ID: 2, UniqueID: "phone-2", Class: domain.DevicePhone},
	}
	if le.Limit != 2 || le.AccountID != 42 || !reflect.DeepEqual(le.Bound, want) {
		t.Errorf("DeviceLimitError = %+v, want limit 2 and bound %+v", le, want)
	}
	if !strings.Contains(err.Error(), "account 42") || !strings.Contains(err.Error(), "2 of 2") {
		t.Errorf("Error() = %q", err)
	}
	// The listed devices are a copy: changing them changes no state.
	state := d.Replay(given...)
	le.Bound[0].Model = "changed"
	if d.Replay(given...).Devices[0].Model != "MAG 524" || state.Devices[0].Model != "MAG 524" {
		t.Errorf("DeviceLimitError shares memory with the state")
	}
}

func TestBindDeviceValidation(t *testing.T) {
	d := domain.AccountDecider()
	tests := []struct {
		name   string
		cmd    domain.BindDevice
		fields []string
	}{
		{"nothing", domain.BindDevice{AccountID: 42}, []string{"id", "unique_id", "class"}},
		{"unknown class", domain.BindDevice{AccountID: 42, DeviceID: 1, UniqueID: "u", Class: "fridge"}, []string{"class"}},
		{"unique id with spaces around", domain.BindDevice{AccountID: 42, DeviceID: 1, UniqueID: " u ", Class: domain.DeviceWeb}, []string{"unique_id"}},
		{"model too long", domain.BindDevice{AccountID: 42, DeviceID: 1, UniqueID: "u", Class: domain.DeviceWeb, Model: strings.Repeat("m", 129)}, []string{"model"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantFields(t, decideErr(t, d, domain.AccountCommand(tt.cmd), created), tt.fields...)
		})
	}
}

func TestDeviceLookups(t *testing.T) {
	a := domain.AccountDecider().Replay(created, device1, device2)
	if dev, ok := a.DeviceByUniqueID("phone-2"); !ok || dev.ID != 2 {
		t.Errorf("DeviceByUniqueID(phone-2) = %+v, %v", dev, ok)
	}
	if _, ok := a.DeviceByUniqueID("nope"); ok {
		t.Errorf("DeviceByUniqueID(nope) found")
	}
	if dev, ok := a.Device(1); !ok || dev.UniqueID != "stb-1" {
		t.Errorf("Device(1) = %+v, %v", dev, ok)
	}
	if got := a.DeviceLimit(ptr(4)); got == nil || *got != 4 {
		t.Errorf("DeviceLimit(4) = %v", got)
	}
	if got := a.DeviceLimit(nil); got != nil {
		t.Errorf("DeviceLimit(nil) = %v", *got)
	}
}

func TestParseDeviceClass(t *testing.T) {
	for _, c := range domain.DeviceClasses() {
		got, err := domain.ParseDeviceClass(strings.ToUpper(string(c)))
		if err != nil || got != c {
			t.Errorf("ParseDeviceClass(%q) = %q, %v", strings.ToUpper(string(c)), got, err)
		}
	}
	for _, s := range []string{"", "fridge", "stb "} {
		if _, err := domain.ParseDeviceClass(s); err == nil {
			t.Errorf("ParseDeviceClass(%q) succeeded", s)
		}
	}
}
