package httpapi

import (
	"context"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"tvsm/internal/platform/admission"
	"tvsm/internal/platform/throttle"
)

// TestAKnownLoginDoesNotWaitForAQueuedCheck: given the only password check
// slot held and the same admin's sign-in from a new address waiting for
// it, when the admin signs in from an address it signed in from before,
// then that sign-in takes the reserved slot at once rather than sharing
// the check still queued, and succeeds while the other still waits.
func TestAKnownLoginDoesNotWaitForAQueuedCheck(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	passwords := NewBcryptAuthenticator(func(login string) (string, *int64, bool) {
		return string(hash), nil, login == "root"
	}, BcryptOptions{DummyCost: bcrypt.MinCost, MaxChecks: 1, MaxCheckWait: time.Minute, CacheSize: -1})
	guard := throttle.NewGuard(throttle.GuardOptions{})
	auth := ThrottleLogins(passwords, guard)
	at := func(addr string) context.Context { return withClientAddress(context.Background(), addr) }

	if _, err := auth.Authenticate(at("10.0.0.1"), "root", "s3cret"); err != nil {
		t.Fatalf("first sign-in from 10.0.0.1: %v", err)
	}
	// The one slot others than known logins may use, held.
	hold, err := passwords.checks.Acquire(context.Background(), admission.Suspect, "10.0.0.66")
	if err != nil {
		t.Fatal(err)
	}
	fresh := make(chan error, 1)
	go func() {
		_, err := auth.Authenticate(at("10.0.0.2"), "root", "s3cret")
		fresh <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); passwords.Waiting() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the sign-in from a new address never queued")
		}
	}
	known := make(chan error, 1)
	go func() {
		_, err := auth.Authenticate(at("10.0.0.1"), "root", "s3cret")
		known <- err
	}()
	select {
	case err := <-known:
		if err != nil {
			t.Fatalf("sign-in from the known address: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sign-in from the known address waited for the queued check")
	}
	select {
	case err := <-fresh:
		t.Fatalf("the sign-in from the new address ended (%v) while the slot was held", err)
	default:
	}
	hold()
	if err := <-fresh; err != nil {
		t.Fatalf("sign-in from the new address once the slot came back: %v", err)
	}
}
