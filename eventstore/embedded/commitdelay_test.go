package embedded

import (
	"testing"
	"time"
)

func TestCommitDelayWaitsOnlyForConcurrentAppends(t *testing.T) {
	c := newCommitDelay(0)
	if c.delay != DefaultCommitDelay {
		t.Fatalf("zero delay: got %v, want the default %v", c.delay, DefaultCommitDelay)
	}
	if got := c.interval(); got != 0 {
		t.Fatalf("before any group: interval %v, want 0", got)
	}
	c.observe(1)
	if got := c.interval(); got != 0 {
		t.Fatalf("after a group of one append (a lone writer): interval %v, want 0", got)
	}
	c.observe(7)
	if got := c.interval(); got != DefaultCommitDelay {
		t.Fatalf("after a group of 7: interval %v, want %v", got, DefaultCommitDelay)
	}
	c.observe(1)
	if got := c.interval(); got != 0 {
		t.Fatalf("back to one append: interval %v, want 0", got)
	}

	off := newCommitDelay(-1)
	off.observe(100)
	if got := off.interval(); got != 0 {
		t.Fatalf("disabled: interval %v, want 0", got)
	}
	custom := newCommitDelay(2 * time.Millisecond)
	custom.observe(2)
	if got := custom.interval(); got != 2*time.Millisecond {
		t.Fatalf("custom: interval %v, want 2ms", got)
	}
}
