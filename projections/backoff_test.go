package projections

import (
	"testing"
	"time"
)

func TestBackoffFullJitterCapped(t *testing.T) {
	b := backoff{base: 100 * time.Millisecond, max: 30 * time.Second}
	caps := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}
	for i, c := range caps {
		if d := b.next(); d < 0 || d > c {
			t.Fatalf("attempt %d: delay %v outside [0, %v]", i, d, c)
		}
	}
	for range 100 { // far past the cap, and past shift overflow
		if d := b.next(); d < 0 || d > 30*time.Second {
			t.Fatalf("delay %v outside [0, 30s]", d)
		}
	}
	b.reset()
	if d := b.next(); d > 100*time.Millisecond {
		t.Fatalf("after reset: delay %v > base", d)
	}
	// Jitter: the delays at the cap are not all equal.
	seen := map[time.Duration]bool{}
	for range 20 {
		b.attempt = 20
		seen[b.next()] = true
	}
	if len(seen) < 2 {
		t.Error("delays are not jittered")
	}
}

func TestModeString(t *testing.T) {
	if Live.String() != "live" || Replay.String() != "replay" || Mode(0).String() != "Mode(0)" {
		t.Error("Mode.String")
	}
	if !Live.SideEffects() || Replay.SideEffects() || Mode(0).SideEffects() {
		t.Error("Mode.SideEffects")
	}
}
