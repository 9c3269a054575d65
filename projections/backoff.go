package projections

import (
	"math/rand/v2"
	"time"
)

// backoff computes retry delays: exponential growth from base, capped at max,
// with full jitter (a uniformly random delay between 0 and the capped value),
// so that many runners failing together do not retry in lockstep.
type backoff struct {
	base, max time.Duration
	attempt   int // failures since the last success
}

// next returns the delay before the next retry and counts the failure.
func (b *backoff) next() time.Duration {
	d := b.max
	if b.attempt < 62 {
		if e := b.base << b.attempt; e > 0 && e < b.max {
			d = e
		}
	}
	b.attempt++
	if d <= 0 {
		return 0
	}
	return rand.N(d + 1)
}

// reset starts the growth again from base after a success.
func (b *backoff) reset() { b.attempt = 0 }
