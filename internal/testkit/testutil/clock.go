package testutil

import (
	"sync"
	"time"
)

// Clock is a settable clock for tests, safe for concurrent use. Pass its Now
// method wherever code takes a clock function. Its AfterFunc makes it a
// schedule.Clock: timers fire when Advance moves the clock past them.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

// fakeTimer is a function waiting for the clock to reach at.
type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

// NewClock returns a clock standing at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d, then calls, on the calling goroutine
// and in time order, every timer function that is due (including ones that
// those functions set up within the new time), so a test knows that every job
// due by the new time has been started when Advance returns.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	for {
		f := c.nextDue()
		if f == nil {
			return
		}
		f()
	}
}

// nextDue removes and returns the earliest due timer's function, or nil.
func (c *Clock) nextDue() func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	best := -1
	for i, t := range c.timers {
		if !t.at.After(c.now) && (best < 0 || t.at.Before(c.timers[best].at)) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	t := c.timers[best]
	c.timers = append(c.timers[:best], c.timers[best+1:]...)
	t.stopped = true
	return t.f
}

// AfterFunc calls f once the clock has been advanced by d or more. Like
// time.AfterFunc, a d <= 0 calls f at once on a new goroutine. The returned
// stop function cancels the timer and reports whether it did so before f was
// called.
func (c *Clock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	if d <= 0 {
		go f()
		return func() bool { return false }
	}
	c.mu.Lock()
	t := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if t.stopped {
			return false
		}
		t.stopped = true
		for i, x := range c.timers {
			if x == t {
				c.timers = append(c.timers[:i], c.timers[i+1:]...)
				break
			}
		}
		return true
	}
}

// Timers returns the number of timers waiting to fire.
func (c *Clock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}
