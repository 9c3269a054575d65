package domaintest_test

import (
	"fmt"

	"tvsm/domain"
	"tvsm/domain/domaintest"
)

// reporter stands in for the *testing.T of a real test: it prints what the
// test would report, so a passing check prints nothing.
type reporter struct{}

func (reporter) Helper() {}

func (reporter) Errorf(format string, args ...any) { fmt.Printf(format+"\n", args...) }

// Example specifies the account aggregate: a switch that changes the
// account, one that changes nothing, and a command the device limit refuses.
// The last check expects the wrong error, to show how a failure reads.
func Example() {
	registry := domain.NewRegistry()
	domain.RegisterEvents(registry)
	// Codec: every run also round-trips given and emitted events through
	// the registry, so an event that does not survive storage fails here.
	spec := domaintest.For(domain.AccountDecider()).Codec(registry)

	created := domain.AccountCreated{AccountID: 42, Provider: 7, Login: "alice",
		PinMD5: "0123456789abcdef0123456789abcdef", Fullname: "Alice Smith", Enabled: true}
	stb := domain.DeviceBound{AccountID: 42, DeviceID: 1, UniqueID: "stb-1", Class: domain.DeviceSTB}
	disable := domain.UpdateAccount{ID: 42, Enabled: domain.Some(false)}
	disabled := domain.AccountUpdated{AccountID: 42, Enabled: domain.Some(false)}
	oneDevice := 1
	bindTV := domain.BindDevice{AccountID: 42, DeviceID: 2, UniqueID: "tv-2", Class: domain.DeviceTV,
		ProviderLimit: &oneDevice}

	t := reporter{} // in a test: the *testing.T
	spec.Given(created).When(disable).Then(t, disabled)
	spec.Given(created, disabled).When(disable).Then(t) // nothing changes, nothing is appended
	spec.Given(created, stb).When(bindTV).ThenError(t, domain.ErrDeviceLimit)

	// Wrong on purpose: the bind fails for another reason than expected.
	spec.Given(created, stb).When(bindTV).ThenError(t, domain.ErrNotFound)
	// Output:
	// Decide: error account 42: device limit reached: 1 of 1 devices bound, want one matching not found
}
