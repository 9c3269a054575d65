package domain_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"tvsm/domain"
	"tvsm/domain/domaintest"
)

// Fuzz targets for everything that comes from outside: logins, digests,
// URLs, partial JSON bodies and whole update commands. They must never
// panic, and what they accept must satisfy the documented rules.

func FuzzValidateAccountLogin(f *testing.F) {
	for _, s := range []string{"alice", " a", "Зоя", "a\x00", "\xff", strings.Repeat("я", 129)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, login string) {
		if domain.ValidateAccountLogin(login) != nil {
			return
		}
		if !utf8.ValidString(login) || utf8.RuneCountInString(login) > domain.MaxAccountLoginLen || login == "" ||
			strings.TrimSpace(login) != login || strings.ContainsFunc(login, unicode.IsControl) {
			t.Errorf("accepted %q", login)
		}
	})
}

func FuzzPinMD5(f *testing.F) {
	for _, s := range []string{pin, strings.ToUpper(pin), "", "xyz", strings.Repeat("g", 32)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := domain.NormalizePinMD5(in)
		if err != nil {
			return
		}
		if len(out) != 32 || out != strings.ToLower(in) || strings.Trim(out, "0123456789abcdef") != "" {
			t.Errorf("NormalizePinMD5(%q) = %q", in, out)
		}
		if again, err := domain.NormalizePinMD5(out); err != nil || again != out {
			t.Errorf("not idempotent on %q", out)
		}
	})
}

func FuzzValidateHTTPURL(f *testing.F) {
	for _, s := range []string{"https://a/b", "http://", "ftp://x", "//x", "http://[::1]:80/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if domain.ValidateHTTPURL(s) == nil && !strings.HasPrefix(strings.ToLower(s), "http") {
			t.Errorf("accepted %q", s)
		}
	})
}

func FuzzValidateAdminLogin(f *testing.F) {
	f.Add("root")
	f.Add("a b")
	f.Fuzz(func(t *testing.T, login string) {
		if domain.ValidateAdminLogin(login) == nil {
			if err := domain.AdminActor(login).Validate(); err != nil {
				t.Errorf("admin login %q is not a valid actor: %v", login, err)
			}
		}
	})
}

func FuzzOptionalJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"name":null}`, `{"name":"x","limit":3,"ids":[1]}`, `{"ids":null}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p patchBody
		if json.Unmarshal(data, &p) != nil {
			return
		}
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", p, err)
		}
		var back patchBody
		if err := json.Unmarshal(out, &back); err != nil || !reflect.DeepEqual(back, p) {
			t.Errorf("%s → %+v → %s → %+v (%v)", data, p, out, back, err)
		}
	})
}

// optionalString builds an Optional from fuzz input: mode 0 absent, 1 null,
// otherwise the value.
func optionalString(mode uint8, v string) domain.Optional[string] { return optionalOf(mode, v) }

// optionalOf returns, by mode, an absent, null or present v.
func optionalOf[T any](mode uint8, v T) domain.Optional[T] {
	switch mode % 3 {
	case 0:
		return domain.Optional[T]{}
	case 1:
		return domain.Null[T]()
	}
	return domain.Some(v)
}

// FuzzUpdateAccount decides arbitrary updates. Whatever is accepted must
// round-trip through the registry, and deciding the same update on the new
// state must append nothing (resync idempotence).
func FuzzUpdateAccount(f *testing.F) {
	f.Add(uint8(2), "bob", uint8(2), pin, uint8(2), "Bob", uint8(1), "", uint8(2), int64(5), 3, uint8(2), true)
	f.Add(uint8(1), "", uint8(1), "", uint8(1), "", uint8(2), "x\ny", uint8(0), int64(-1), -1, uint8(1), false)
	r := eventRegistry()
	d := domain.AccountDecider()
	f.Fuzz(func(t *testing.T, lm uint8, login string, pm uint8, pinIn string, fm uint8, fullname string,
		cm uint8, contract string, rm uint8, region int64, limit int, em uint8, enabled bool) {
		cmd := domain.UpdateAccount{
			ID: 42, Login: optionalString(lm, login), PinMD5: optionalString(pm, pinIn), Fullname: optionalString(fm, fullname),
			ContractInfo: optionalString(cm, contract), RegionTag: optionalOf(rm, region),
		}
		switch em % 3 {
		case 1:
			cmd.Enabled = domain.Null[bool]()
		case 2:
			cmd.Enabled = domain.Some(enabled)
		}
		if limit%2 == 0 {
			cmd.DevicesPerAccountLimit = domain.Some(limit)
		} else {
			cmd.DevicesPerAccountLimit = domain.Null[int]()
		}
		state := d.Replay(created)
		events, err := d.Decide(state, cmd, domaintest.Now())
		if err != nil {
			if !errors.Is(err, domain.ErrValidation) || len(events) > 0 {
				t.Fatalf("error %v with events %v", err, events)
			}
			return
		}
		for _, e := range events {
			name, data, err := r.Encode(e)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			back, err := r.Decode(name, data)
			if err != nil || !reflect.DeepEqual(back, e) {
				t.Fatalf("round trip of %#v: %#v, %v", e, back, err)
			}
		}
		next := d.Fold(state, events...)
		again, err := d.Decide(next, cmd, domaintest.Now())
		if err != nil || len(again) > 0 {
			t.Errorf("second decide: %v, %v", again, err)
		}
	})
}

// FuzzSubscription adds and then updates a subscription with arbitrary
// times: no panic, stop always after start, and re-sending is a no-op.
func FuzzSubscription(f *testing.F) {
	f.Add(int64(1767225600), int64(1769904000), true)
	f.Add(int64(0), int64(-1), false)
	f.Add(int64(253402300800), int64(253402300801), true)
	d := domain.AccountDecider()
	f.Fuzz(func(t *testing.T, start, stop int64, hasStop bool) {
		add := domain.AddSubscription{AccountID: 42, SubscriptionID: 1, Tariff: 5, TariffProvider: 7, Start: time.Unix(start, 0)}
		if hasStop {
			add.Stop = ptr(time.Unix(stop, 0))
		}
		state := d.Replay(created)
		events, err := d.Decide(state, add, domaintest.Now())
		if err != nil {
			return
		}
		state = d.Fold(state, events...)
		sub, ok := state.Subscription(1)
		if !ok || (!sub.Open() && !sub.Stop.After(sub.Start)) {
			t.Fatalf("bad subscription %+v", sub)
		}
		update := domain.UpdateSubscription{AccountID: 42, SubscriptionID: 1, Start: domain.Some(add.Start), Stop: domain.FromPtr(add.Stop)}
		if again, err := d.Decide(state, update, domaintest.Now()); err != nil || len(again) > 0 {
			t.Errorf("re-sent subscription: %v, %v", again, err)
		}
	})
}

// FuzzBindDevice binds arbitrary devices under arbitrary limits: the number
// bound never exceeds the limit.
func FuzzBindDevice(f *testing.F) {
	f.Add("stb-9", "stb", "MAG", 2, true)
	f.Add(" ", "fridge", "", -1, false)
	d := domain.AccountDecider()
	f.Fuzz(func(t *testing.T, uid, class, model string, limit int, limited bool) {
		var providerLimit *int
		if limited {
			providerLimit = &limit
		}
		state := d.Replay(created, device1, device2)
		cmd := domain.BindDevice{AccountID: 42, DeviceID: 9, UniqueID: uid, Class: domain.DeviceClass(class), Model: model, ProviderLimit: providerLimit}
		events, err := d.Decide(state, cmd, domaintest.Now())
		if err != nil {
			return
		}
		next := d.Fold(state, events...)
		if limited && len(events) > 0 && len(next.Devices) > limit {
			t.Errorf("%d devices bound under limit %d", len(next.Devices), limit)
		}
	})
}
