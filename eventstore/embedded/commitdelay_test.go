package embedded

import (
	"testing"
	"time"
)

func TestCommitDelayGrowsWithConcurrentAppends(t *testing.T) {
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
	c.applied(1)
	if got, want := c.interval(), DefaultCommitDelay*2/fullDelayWaiting; got != want {
		t.Fatalf("2 appends waiting: interval %v, want %v", got, want)
	}
	c.applied(fullDelayWaiting/2 - 2)
	if got, want := c.interval(), DefaultCommitDelay/2; got != want {
		t.Fatalf("%d appends waiting: interval %v, want half the delay, %v", fullDelayWaiting/2, got, want)
	}
	c.applied(fullDelayWaiting)
	if got := c.interval(); got != DefaultCommitDelay {
		t.Fatalf("%d appends waiting: interval %v, want the whole delay %v", fullDelayWaiting*3/2, got, DefaultCommitDelay)
	}
	c.answered(fullDelayWaiting*3/2 - 1)
	if got := c.interval(); got != 0 {
		t.Fatalf("back to one append: interval %v, want 0", got)
	}

	off := newCommitDelay(-1)
	off.applied(100)
	if got := off.interval(); got != 0 {
		t.Fatalf("disabled: interval %v, want 0", got)
	}
	custom := newCommitDelay(2 * time.Millisecond)
	custom.applied(fullDelayWaiting)
	if got := custom.interval(); got != 2*time.Millisecond {
		t.Fatalf("custom: interval %v, want 2ms", got)
	}
}
