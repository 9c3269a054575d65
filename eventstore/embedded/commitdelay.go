package embedded

import (
	"sync/atomic"
	"time"
)

// DefaultCommitDelay is Options.CommitDelay when it is zero.
//
// Measured on a 2-core VM whose fsync takes about 300 µs: 300 µs gave account
// creates over HTTP about 20% more throughput and 60% fewer fsyncs than no
// delay; 500 µs and more lost throughput again to the added latency
// (docs/benchmarks.md).
const DefaultCommitDelay = 300 * time.Microsecond

// commitDelay spaces fsyncs out while appends arrive concurrently, as
// PostgreSQL's commit_delay does once commit_siblings transactions are
// active: after an fsync, the next one waits until the delay has passed, so
// that the appends arriving meanwhile share it. Each fsync costs a fixed
// amount of CPU and, on machines with a coarse kernel timer, holds a Go
// scheduler P for most of its duration (the runtime's sysmon takes a P back
// from a blocking syscall only after one to two of its ticks), so fewer,
// larger groups leave more CPU for the requests themselves.
//
// A lone appender (no other append waiting for an fsync with it) is never
// delayed: its next append would wait for nobody to join it.
type commitDelay struct {
	delay   time.Duration
	waiting atomic.Int64 // appends applied to pebble and not yet answered
}

func newCommitDelay(d time.Duration) *commitDelay {
	if d == 0 {
		d = DefaultCommitDelay
	}
	return &commitDelay{delay: max(d, 0)}
}

// interval is pebble's WALMinSyncInterval: how long after the previous
// fsync the next one may start.
func (c *commitDelay) interval() time.Duration {
	if c.delay == 0 || c.waiting.Load() < 2 {
		return 0
	}
	return c.delay
}

// applied counts appends handed to pebble, answered takes them off again.
func (c *commitDelay) applied(appends int)  { c.waiting.Add(int64(appends)) }
func (c *commitDelay) answered(appends int) { c.waiting.Add(-int64(appends)) }
