package throttle

import (
	"testing"
	"time"

	"tvsm/internal/testkit/testutil"
)

// TestStandingOfAnAttempt: given a guard, an address with no failure is
// clean; once it fails, attempts from it are failing, whatever the login;
// a login that succeeded from an address is known there, for KnownFor,
// also while the address fails for other logins, and only there.
func TestStandingOfAnAttempt(t *testing.T) {
	clock := testutil.NewClock(t0)
	g := NewGuard(GuardOptions{KnownFor: time.Hour, Clock: clock.Now})
	if s := g.Standing("root", "10.0.0.1"); s != Clean {
		t.Fatalf("fresh address: %v, want Clean", s)
	}
	mustBegin(t, g, "root", "10.0.0.1").Succeeded()
	fail(t, g, "guess", "10.0.0.1")
	fail(t, g, "guess", "10.0.0.66")
	for _, c := range []struct {
		login, address string
		want           Standing
	}{
		{"root", "10.0.0.1", Known},
		{"other", "10.0.0.1", Failing},
		{"root", "10.0.0.66", Failing},
		{"root", "10.0.0.2", Clean},
	} {
		if s := g.Standing(c.login, c.address); s != c.want {
			t.Errorf("%s from %s: %v, want %v", c.login, c.address, s, c.want)
		}
	}
	// A success that needed no check (cached credentials) makes a pair
	// known too.
	g.Forget("bob", "10.0.0.2")
	if s := g.Standing("bob", "10.0.0.2"); s != Known {
		t.Errorf("bob after Forget: %v, want Known", s)
	}
	clock.Advance(time.Hour)
	if s := g.Standing("root", "10.0.0.1"); s != Clean {
		t.Errorf("root an hour later (failures aged out too): %v, want Clean", s)
	}
	var none *Guard
	if s := none.Standing("root", "10.0.0.1"); s != Clean {
		t.Errorf("nil guard: %v, want Clean", s)
	}
}

// TestKnownPairsAreBounded: given MaxKeys pairs known, when one more
// succeeds, then the oldest is forgotten.
func TestKnownPairsAreBounded(t *testing.T) {
	clock := testutil.NewClock(t0)
	k := newKnownPairs(time.Hour, 2, clock.Now)
	k.add("a", "1")
	clock.Advance(time.Second)
	k.add("b", "1")
	clock.Advance(time.Second)
	k.add("c", "1")
	if k.has("a", "1") || !k.has("b", "1") || !k.has("c", "1") {
		t.Fatalf("after 3 adds with room for 2: a %v, b %v, c %v; want false, true, true", k.has("a", "1"), k.has("b", "1"), k.has("c", "1"))
	}
	if len(k.byKey) != 2 || k.order.Len() != 2 {
		t.Fatalf("%d keys, %d in order; want 2", len(k.byKey), k.order.Len())
	}
}
