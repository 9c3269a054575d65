package domain_test

import (
	"strings"
	"testing"

	"tvsm/domain"
)

// builders are the domain's stream name helpers, by kind.
var builders = map[domain.StreamKind]func(int64) string{
	domain.StreamAccount:    domain.AccountStream,
	domain.StreamProvider:   domain.ProviderStream,
	domain.StreamTariff:     domain.TariffStream,
	domain.StreamChannel:    domain.ChannelStream,
	domain.StreamCategory:   domain.CategoryStream,
	domain.StreamCommand:    domain.CommandStream,
	domain.StreamReceipt:    domain.ReceiptStream,
	domain.StreamDevice:     domain.DeviceStream,
	domain.StreamTariffTag:  domain.TariffTagStream,
	domain.StreamRegion:     domain.RegionStream,
	domain.StreamDeviceType: domain.DeviceTypeStream,
}

func TestParseStreamReadsWhatTheHelpersWrite(t *testing.T) {
	// Given the name of every kind of stream, written by its helper,
	for kind, build := range builders {
		for _, id := range []int64{1, 42, 9223372036854775807} {
			name := build(id)
			// when it is parsed,
			ref, ok := domain.ParseStream(name)
			// then the kind and id come back, and so does the name.
			if !ok || ref != (domain.StreamRef{Kind: kind, ID: id}) {
				t.Errorf("ParseStream(%q) = %+v, %v; want %v %d", name, ref, ok, kind, id)
			}
			if ref.Name() != name || !strings.HasPrefix(name, kind.Prefix()) {
				t.Errorf("%+v: Name %q, Prefix %q; want the name %q", ref, ref.Name(), kind.Prefix(), name)
			}
		}
	}
	// Given admin streams, whose logins may hold dashes and dots, the login comes back.
	for _, login := range []string{"root", "ops-bob", "a.b@c-d", "-"} {
		name := domain.AdminStream(login)
		if ref, ok := domain.ParseStream(name); !ok || ref != (domain.StreamRef{Kind: domain.StreamAdmin, Login: login}) || ref.Name() != name {
			t.Errorf("ParseStream(%q) = %+v, %v", name, ref, ok)
		}
	}
}

func TestParseStreamRejectsWhatNoHelperWrites(t *testing.T) {
	// Given names no helper writes for a positive id or a login (other
	// spellings of an id, bookkeeping streams, no id at all), when parsed,
	// then they are not taken for a domain stream.
	for _, name := range []string{
		"", "account", "account-", "account-0", "account--1", "account-007", "account-+7", "account-7 ",
		" account-7", "account-7x", "account-9223372036854775808", "Account-7", "accounts-7", "admin-",
		"ids-account", "login-1-x", "idem-abc", "receipt", "-7", "device-1-2", "device_type-", "tariff_tag-0",
		"region-x", "device-type-1",
	} {
		if ref, ok := domain.ParseStream(name); ok || ref != (domain.StreamRef{}) {
			t.Errorf("ParseStream(%q) = %+v, %v; want nothing", name, ref, ok)
		}
	}
	// A kind's name and prefix agree; no kind has neither.
	if domain.StreamDevice.String() != "device" || domain.StreamKind(0).Prefix() != "" ||
		domain.StreamKind(200).Prefix() != "" || (domain.StreamRef{}).Name() != "" {
		t.Error("kind without a prefix")
	}
}

// FuzzParseStream checks that ParseStream and the stream helpers are
// inverses: a name it accepts is exactly what the helper of its kind writes
// for what it parsed, and what a helper writes for a positive id (or a
// non-empty login) parses back to that id. Stream names come from the
// store, which clients fill, so it must also never panic.
func FuzzParseStream(f *testing.F) {
	for _, s := range []string{"account-7", "admin-root", "command-12", "device-007", "tariff-0", "ids-x", "admin-", "receipt-9223372036854775807"} {
		f.Add(s, int64(7))
	}
	f.Add("", int64(-1))
	f.Fuzz(func(t *testing.T, name string, id int64) {
		if ref, ok := domain.ParseStream(name); ok {
			build := builders[ref.Kind]
			switch {
			case ref.Kind == domain.StreamAdmin:
				if ref.ID != 0 || ref.Login == "" || domain.AdminStream(ref.Login) != name {
					t.Errorf("ParseStream(%q) = %+v", name, ref)
				}
			case build == nil || ref.ID <= 0 || ref.Login != "" || build(ref.ID) != name:
				t.Errorf("ParseStream(%q) = %+v", name, ref)
			}
			if ref.Name() != name {
				t.Errorf("ParseStream(%q).Name() = %q", name, ref.Name())
			}
		}
		for kind, build := range builders {
			ref, ok := domain.ParseStream(build(id))
			if want := (domain.StreamRef{Kind: kind, ID: id}); ok != (id > 0) || ok && ref != want {
				t.Errorf("ParseStream(%q) = %+v, %v", build(id), ref, ok)
			}
		}
		ref, ok := domain.ParseStream(domain.AdminStream(name))
		if ok != (name != "") || ok && ref != (domain.StreamRef{Kind: domain.StreamAdmin, Login: name}) {
			t.Errorf("ParseStream(%q) = %+v, %v", domain.AdminStream(name), ref, ok)
		}
	})
}
