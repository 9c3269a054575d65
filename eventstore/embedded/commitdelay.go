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
// active: after an fsync, the next one waits a while, so that the appends
// arriving meanwhile share it. Each fsync costs a fixed amount of CPU and,
// on machines with a coarse kernel timer, holds a Go scheduler P for most of
// its duration (the runtime's sysmon takes a P back from a blocking syscall
// only after one to two of its ticks), so fewer, larger groups leave more
// CPU for the requests themselves.
//
// The wait grows with the appends waiting for an fsync, up to the full
// delay at fullDelayWaiting of them: few concurrent appenders gain little
// from a longer wait (few others can join the group) and lose its whole
// length in latency. Against a fixed 300 µs, account creates over HTTP
// from 2 clients went from 1.9k to 3.0k/s and from 8 clients from 5.3k to
// 6.2k/s; 64 clients, which keep the full delay, were unchanged
// (docs/eventstore.md).
//
// A lone appender is never delayed: its next append would wait for nobody
// to join it.
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
	w := c.waiting.Load()
	if c.delay == 0 || w < 2 {
		return 0
	}
	if w >= fullDelayWaiting {
		return c.delay
	}
	return c.delay * time.Duration(w) / fullDelayWaiting
}

// fullDelayWaiting is how many appends must wait for an fsync before it is
// delayed by the whole commit delay.
const fullDelayWaiting = 16

// applied counts appends handed to pebble, answered takes them off again.
func (c *commitDelay) applied(appends int)  { c.waiting.Add(int64(appends)) }
func (c *commitDelay) answered(appends int) { c.waiting.Add(-int64(appends)) }
