package domain_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"tvsm/domain"
	"tvsm/domain/domaintest"
)

type accountCase = domaintest.Case[domain.Account, domain.AccountCommand]

const pin = "0123456789abcdef0123456789abcdef"

// created is the history every account test starts from: account 42 of
// provider 7, enabled.
var created = domain.AccountCreated{
	AccountID: 42, Provider: 7, Login: "alice", PinMD5: pin, Fullname: "Alice Smith", Enabled: true,
}

func accountSpec() domaintest.Spec[domain.Account, domain.AccountCommand] {
	return domaintest.For(domain.AccountDecider()).Codec(eventRegistry())
}

func TestCreateAccount(t *testing.T) {
	accountSpec().Run(t,
		accountCase{
			Name: "minimal create is enabled by default",
			When: domain.CreateAccount{ID: 42, Provider: 7, Login: "alice", PinMD5: pin, Fullname: "Alice Smith"},
			Then: []domain.Event{created},
		},
		accountCase{
			Name: "every field, pin stored lowercase",
			When: domain.CreateAccount{
				ID: 43, Provider: 7, Login: "bob@example", PinMD5: strings.ToUpper(pin), Fullname: "Bob",
				Enabled: ptr(false), RemoteCustomField: ptr("ext-1"), ContractInfo: ptr("contract\nline 2"),
				MainAddress: ptr("1 Main St"), AccountDesc: ptr(""), RegionTag: ptr[int64](3),
				DevicesPerAccountLimit: ptr(0),
			},
			Then: []domain.Event{domain.AccountCreated{
				AccountID: 43, Provider: 7, Login: "bob@example", PinMD5: pin, Fullname: "Bob",
				RemoteCustomField: ptr("ext-1"), ContractInfo: ptr("contract\nline 2"),
				MainAddress: ptr("1 Main St"), AccountDesc: ptr(""), RegionTag: ptr[int64](3),
				DevicesPerAccountLimit: ptr(0),
			}},
		},
		accountCase{
			Name: "an empty pin makes an account without a password",
			When: domain.CreateAccount{ID: 44, Provider: 7, Login: "carol", PinMD5: "", Fullname: "Carol"},
			Then: []domain.Event{domain.AccountCreated{AccountID: 44, Provider: 7, Login: "carol", PinMD5: "", Fullname: "Carol", Enabled: true}},
		},
		accountCase{
			Name:  "existing id",
			Given: []domain.Event{created},
			When:  domain.CreateAccount{ID: 42, Provider: 7, Login: "alice", PinMD5: pin, Fullname: "Alice Smith"},
			Err:   domain.ErrAlreadyExists,
		},
		accountCase{
			Name:  "deleted id is never reused",
			Given: []domain.Event{created, domain.AccountDeleted{AccountID: 42}},
			When:  domain.CreateAccount{ID: 42, Provider: 7, Login: "alice", PinMD5: pin, Fullname: "Alice Smith"},
			Err:   domain.ErrAlreadyExists,
		},
	)
}

func TestCreateAccountValidation(t *testing.T) {
	d := domain.AccountDecider()
	valid := domain.CreateAccount{ID: 42, Provider: 7, Login: "alice", PinMD5: pin, Fullname: "Alice"}
	tests := []struct {
		name   string
		edit   func(*domain.CreateAccount)
		fields []string
	}{
		{"empty command", func(c *domain.CreateAccount) { *c = domain.CreateAccount{} },
			[]string{"id", "provider", "login", "fullname"}},
		{"login with a space at the end", func(c *domain.CreateAccount) { c.Login = "alice " }, []string{"login"}},
		{"login too long", func(c *domain.CreateAccount) { c.Login = strings.Repeat("я", 129) }, []string{"login"}},
		{"login with a control character", func(c *domain.CreateAccount) { c.Login = "al\x00ice" }, []string{"login"}},
		{"pin too short", func(c *domain.CreateAccount) { c.PinMD5 = "abc" }, []string{"pin_md5"}},
		{"pin not hex", func(c *domain.CreateAccount) { c.PinMD5 = strings.Repeat("g", 32) }, []string{"pin_md5"}},
		{"fullname too long", func(c *domain.CreateAccount) { c.Fullname = strings.Repeat("x", 256) }, []string{"fullname"}},
		{"negative limit", func(c *domain.CreateAccount) { c.DevicesPerAccountLimit = ptr(-1) }, []string{"devices_per_account_limit"}},
		{"region tag not an id", func(c *domain.CreateAccount) { c.RegionTag = ptr[int64](0) }, []string{"region_tag"}},
		{"remote field too long", func(c *domain.CreateAccount) { c.RemoteCustomField = ptr(strings.Repeat("x", 256)) }, []string{"remote_custom_field"}},
		{"contract info not UTF-8", func(c *domain.CreateAccount) { c.ContractInfo = ptr("\xff") }, []string{"contract_info"}},
		{"main address too long", func(c *domain.CreateAccount) { c.MainAddress = ptr(strings.Repeat("x", 501)) }, []string{"main_address"}},
		{"description with a bell", func(c *domain.CreateAccount) { c.AccountDesc = ptr("\a") }, []string{"account_desc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid
			tt.edit(&c)
			wantFields(t, decideErr(t, d, domain.AccountCommand(c)), tt.fields...)
		})
	}
}

func TestValidationErrorText(t *testing.T) {
	err := decideErr(t, domain.AccountDecider(), domain.AccountCommand(domain.CreateAccount{ID: 1, Provider: 1, Fullname: "x", PinMD5: "12"}))
	if got, want := err.Error(), "login: required; pin_md5: must be 32 hex characters"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestUpdateAccount(t *testing.T) {
	full := created
	full.RegionTag = ptr[int64](3)
	full.DevicesPerAccountLimit = ptr(3)
	accountSpec().Run(t,
		accountCase{
			Name:  "one field",
			Given: []domain.Event{created},
			When:  domain.UpdateAccount{ID: 42, Fullname: domain.Some("Alice Jones")},
			Then:  []domain.Event{domain.AccountUpdated{AccountID: 42, Fullname: domain.Some("Alice Jones")}},
		},
		accountCase{
			Name:  "only the fields that change",
			Given: []domain.Event{full},
			When: domain.UpdateAccount{
				ID: 42, Enabled: domain.Some(true), Login: domain.Some("alice2"), PinMD5: domain.Some(strings.ToUpper(pin)),
				Fullname: domain.Some("Alice Smith"), Provider: domain.Some[int64](7), RegionTag: domain.Null[int64](),
				MainAddress: domain.Some("2 High St"), DevicesPerAccountLimit: domain.Some(3), AccountDesc: domain.Null[string](),
			},
			Then: []domain.Event{domain.AccountUpdated{
				AccountID: 42, Login: domain.Some("alice2"), MainAddress: domain.Some("2 High St"), RegionTag: domain.Null[int64](),
			}},
		},
		accountCase{
			Name:  "resync of the whole record appends nothing",
			Given: []domain.Event{full},
			When: domain.UpdateAccount{
				ID: 42, Enabled: domain.Some(true), Login: domain.Some("alice"), PinMD5: domain.Null[string](),
				Fullname: domain.Some("Alice Smith"), Provider: domain.Some[int64](7), RemoteCustomField: domain.Null[string](),
				ContractInfo: domain.Null[string](), MainAddress: domain.Null[string](), AccountDesc: domain.Null[string](),
				RegionTag: domain.Some[int64](3), DevicesPerAccountLimit: domain.Some(3),
			},
		},
		accountCase{
			Name:  "empty update appends nothing",
			Given: []domain.Event{created},
			When:  domain.UpdateAccount{ID: 42},
		},
		accountCase{
			Name:  "new pin",
			Given: []domain.Event{created},
			When:  domain.UpdateAccount{ID: 42, PinMD5: domain.Some(strings.Repeat("F", 32))},
			Then:  []domain.Event{domain.AccountUpdated{AccountID: 42, PinMD5: domain.Some(strings.Repeat("f", 32))}},
		},
		accountCase{
			Name:  "an empty pin leaves the password as it is (the SDKs send it for a password not given)",
			Given: []domain.Event{created},
			When:  domain.UpdateAccount{ID: 42, PinMD5: domain.Some("")},
		},
		accountCase{
			Name:  "a pin for an account created without a password",
			Given: []domain.Event{domain.AccountCreated{AccountID: 44, Provider: 7, Login: "carol", Fullname: "Carol", Enabled: true}},
			When:  domain.UpdateAccount{ID: 44, PinMD5: domain.Some(pin)},
			Then:  []domain.Event{domain.AccountUpdated{AccountID: 44, PinMD5: domain.Some(pin)}},
		},
		accountCase{
			Name:  "limit set to null defers to the provider",
			Given: []domain.Event{full},
			When:  domain.UpdateAccount{ID: 42, DevicesPerAccountLimit: domain.Null[int]()},
			Then:  []domain.Event{domain.AccountUpdated{AccountID: 42, DevicesPerAccountLimit: domain.Null[int]()}},
		},
		accountCase{
			Name:  "empty string is a value, not null",
			Given: []domain.Event{created},
			When:  domain.UpdateAccount{ID: 42, ContractInfo: domain.Some("")},
			Then:  []domain.Event{domain.AccountUpdated{AccountID: 42, ContractInfo: domain.Some("")}},
		},
		accountCase{
			Name: "unknown account",
			When: domain.UpdateAccount{ID: 42, Fullname: domain.Some("x")},
			Err:  domain.ErrNotFound,
		},
	)
}

func TestUpdateAccountValidation(t *testing.T) {
	d := domain.AccountDecider()
	tests := []struct {
		name   string
		cmd    domain.UpdateAccount
		fields []string
	}{
		{"provider changes", domain.UpdateAccount{ID: 42, Provider: domain.Some[int64](8)}, []string{"provider"}},
		{"provider null", domain.UpdateAccount{ID: 42, Provider: domain.Null[int64]()}, []string{"provider"}},
		{"login null", domain.UpdateAccount{ID: 42, Login: domain.Null[string]()}, []string{"login"}},
		{"login empty", domain.UpdateAccount{ID: 42, Login: domain.Some("")}, []string{"login"}},
		{"enabled null", domain.UpdateAccount{ID: 42, Enabled: domain.Null[bool]()}, []string{"enabled"}},
		{"fullname null", domain.UpdateAccount{ID: 42, Fullname: domain.Null[string]()}, []string{"fullname"}},
		{"bad pin", domain.UpdateAccount{ID: 42, PinMD5: domain.Some("x")}, []string{"pin_md5"}},
		{"negative limit", domain.UpdateAccount{ID: 42, DevicesPerAccountLimit: domain.Some(-5)}, []string{"devices_per_account_limit"}},
		{"several at once, valid fields not applied", domain.UpdateAccount{
			ID: 42, Provider: domain.Some[int64](1), Login: domain.Some(" x"), Fullname: domain.Some("ok"),
			RegionTag: domain.Some[int64](-2),
		}, []string{"provider", "login", "region_tag"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantFields(t, decideErr(t, d, domain.AccountCommand(tt.cmd), created), tt.fields...)
		})
	}
}

// TestAccountEnabledTransitions follows the account's states: enabled
// true → false → true, and a repeated switch appends nothing.
func TestAccountEnabledTransitions(t *testing.T) {
	disable := domain.UpdateAccount{ID: 42, Enabled: domain.Some(false)}
	enable := domain.UpdateAccount{ID: 42, Enabled: domain.Some(true)}
	disabled := domain.AccountUpdated{AccountID: 42, Enabled: domain.Some(false)}
	enabled := domain.AccountUpdated{AccountID: 42, Enabled: domain.Some(true)}
	spec := accountSpec()

	spec.Given(created).When(disable).Then(t, disabled)
	spec.Given(created, disabled).When(enable).Then(t, enabled)
	spec.Given(created, disabled).When(disable).Then(t)
	spec.Given(created, disabled, enabled).When(enable).Then(t)

	want := domain.Account{ID: 42, Provider: 7, Login: "alice", PinMD5: pin, Fullname: "Alice Smith"}
	spec.Given(created).When(disable).ThenState(t, want)
	want.Enabled = true
	spec.Given(created, disabled).When(enable).ThenState(t, want)
}

func TestDeleteAccount(t *testing.T) {
	deleted := domain.AccountDeleted{AccountID: 42}
	spec := accountSpec()
	spec.Given(created).When(domain.DeleteAccount{ID: 42}).Then(t, deleted)
	spec.Given(created, sub1, device1).When(domain.DeleteAccount{ID: 42}).
		ThenState(t, domain.Account{ID: 42, Provider: 7, Login: "alice", PinMD5: pin, Fullname: "Alice Smith", Enabled: true, Deleted: true})

	afterDelete := []domain.AccountCommand{
		domain.UpdateAccount{ID: 42, Fullname: domain.Some("x")},
		domain.UpdateAccount{ID: 42},
		domain.DeleteAccount{ID: 42},
		domain.AddSubscription{AccountID: 42, SubscriptionID: 2, Tariff: 5, TariffProvider: 7, Start: day(1, 1)},
		domain.UpdateSubscription{AccountID: 42, SubscriptionID: 1, Stop: domain.Some(day(2, 1))},
		domain.RemoveSubscription{AccountID: 42, SubscriptionID: 1},
		domain.BindDevice{AccountID: 42, DeviceID: 9, UniqueID: "u9", Class: domain.DeviceWeb},
		domain.UnbindDevice{AccountID: 42, DeviceID: 1},
	}
	for _, c := range afterDelete {
		spec.Given(created, sub1, device1, deleted).When(c).ThenError(t, domain.ErrNotFound)
		err := decideErr(t, domain.AccountDecider(), c, created, deleted)
		if !strings.Contains(err.Error(), "account 42") {
			t.Errorf("%T: error %q does not name the account", c, err)
		}
	}
}

func TestAccountCommandOnOtherState(t *testing.T) {
	err := decideErr(t, domain.AccountDecider(), domain.AccountCommand(domain.UpdateAccount{ID: 43}), created)
	if errors.Is(err, domain.ErrNotFound) || errors.Is(err, domain.ErrValidation) {
		t.Errorf("a command decided on another account's state is a programming error, got %v", err)
	}
}

func TestAccountStreams(t *testing.T) {
	cmds := map[string]domain.AccountCommand{
		"create": domain.CreateAccount{ID: 42}, "update": domain.UpdateAccount{ID: 42}, "delete": domain.DeleteAccount{ID: 42},
		"add": domain.AddSubscription{AccountID: 42}, "change": domain.UpdateSubscription{AccountID: 42},
		"remove": domain.RemoveSubscription{AccountID: 42}, "bind": domain.BindDevice{AccountID: 42},
		"unbind": domain.UnbindDevice{AccountID: 42},
	}
	for name, c := range cmds {
		if got := c.Stream(); got != "account-42" {
			t.Errorf("%s: Stream() = %q", name, got)
		}
	}
}

func TestAccountStateIsNotShared(t *testing.T) {
	d := domain.AccountDecider()
	before := d.Replay(created, sub1, sub2, device1)
	snapshot := reflect.ValueOf(before.Subscriptions).Index(0).Interface()
	after := d.Fold(before,
		domain.SubscriptionChanged{AccountID: 42, SubscriptionID: 1, Stop: domain.Some(day(3, 1))},
		domain.SubscriptionRemoved{AccountID: 42, SubscriptionID: 2},
		domain.DeviceUnbound{AccountID: 42, DeviceID: 1, UniqueID: "stb-1"},
		domain.DeviceBound{AccountID: 42, DeviceID: 5, UniqueID: "tv-5", Class: domain.DeviceTV},
	)
	if !reflect.DeepEqual(before.Subscriptions[0], snapshot) || len(before.Subscriptions) != 2 || len(before.Devices) != 1 {
		t.Errorf("Evolve modified the earlier state: %+v", before)
	}
	if len(after.Subscriptions) != 1 || after.Subscriptions[0].Open() || len(after.Devices) != 1 || after.Devices[0].ID != 5 {
		t.Errorf("state after = %+v", after)
	}
}

func TestAccountEvolveIgnoresUnknownEvents(t *testing.T) {
	d := domain.AccountDecider()
	want := d.Replay(created)
	got := d.Fold(want, domain.TariffDeleted{TariffID: 1},
		domain.SubscriptionChanged{AccountID: 42, SubscriptionID: 99, Stop: domain.Some(day(1, 1))},
		domain.SubscriptionRemoved{AccountID: 42, SubscriptionID: 99},
		domain.DeviceUnbound{AccountID: 42, DeviceID: 99})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("state changed: %+v", got)
	}
}
