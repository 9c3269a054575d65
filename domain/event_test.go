package domain_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"tvsm/domain"
)

var eventTypePattern = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*\.v[1-9][0-9]*$`)

func TestValidateEventType(t *testing.T) {
	valid := []string{"AccountCreated.v1", "X.v1", "A1b2.v10", "DeviceConnected.v123", "A" + strings.Repeat("b", 124) + ".v1"}
	invalid := []string{
		"", "accountCreated.v1", "AccountCreated", "AccountCreated.v0", "AccountCreated.v01",
		"AccountCreated.V1", "AccountCreated.v", "AccountCreated.1", "Account_Created.v1",
		"Account.Created.v1", "AccountCreated.v1 ", " AccountCreated.v1", "AccountCreated.v1x",
		"account.created.v1", "Ä.v1", ".v1", "A" + strings.Repeat("b", 125) + ".v1",
	}
	for _, name := range valid {
		if err := domain.ValidateEventType(name); err != nil {
			t.Errorf("ValidateEventType(%q) = %v, want nil", name, err)
		}
	}
	for _, name := range invalid {
		if err := domain.ValidateEventType(name); !errors.Is(err, domain.ErrInvalidEventType) {
			t.Errorf("ValidateEventType(%q) = %v, want ErrInvalidEventType", name, err)
		}
	}
}

func TestEventTypeVersion(t *testing.T) {
	base, v, ok := domain.EventTypeVersion("AccountCreated.v12")
	if !ok || base != "AccountCreated" || v != 12 {
		t.Errorf("EventTypeVersion = %q, %d, %v", base, v, ok)
	}
	for _, name := range []string{"AccountCreated", "X.v99999999999999999999999"} {
		if _, _, ok := domain.EventTypeVersion(name); ok {
			t.Errorf("EventTypeVersion(%q) ok", name)
		}
	}
}

func FuzzValidateEventType(f *testing.F) {
	for _, s := range []string{"AccountCreated.v1", "a.v1", "A.v0", "A.v10", "A..v1", "A.v1\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		want := eventTypePattern.MatchString(name) && len(name) <= domain.MaxEventTypeLen
		if got := domain.ValidateEventType(name) == nil; got != want {
			t.Errorf("ValidateEventType(%q) valid = %v, regexp says %v", name, got, want)
		}
	})
}
