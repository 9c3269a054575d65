package schedule

import "time"

// Clock is the time source of Timers: its Now decides what is due, and
// AfterFunc wakes the heap when the earliest job comes due.
// testutil.Clock implements it for tests.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f once d has elapsed, on a goroutine of the clock's
	// choosing, and returns a function that cancels the call and reports
	// whether it did so before f started. It must not call f before
	// returning.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// System is the real clock.
var System Clock = systemClock{}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}
