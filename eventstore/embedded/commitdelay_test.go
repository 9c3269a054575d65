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
	c.applied(1)
	if got := c.interval(); got != 0 {
		t.Fatalf("one append waiting (a lone writer): interval %v, want 0", got)
	}
	c.applied(6)
	if got := c.interval(); got != DefaultCommitDelay {
		t.Fatalf("7 appends waiting: interval %v, want %v", got, DefaultCommitDelay)
	}
	c.answered(6)
	if got := c.interval(); got != 0 {
		t.Fatalf("back to one append: interval %v, want 0", got)
	}

	off := newCommitDelay(-1)
	off.applied(100)
	if got := off.interval(); got != 0 {
		t.Fatalf("disabled: interval %v, want 0", got)
	}
	custom := newCommitDelay(2 * time.Millisecond)
	custom.applied(2)
	if got := custom.interval(); got != 2*time.Millisecond {
		t.Fatalf("custom: interval %v, want 2ms", got)
	}
}
