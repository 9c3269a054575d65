package schedule

import (
	"sync"
	"time"

	"tvsm/internal/platform/indexheap"
	"tvsm/internal/platform/supervise"
)

// Timers is a heap of one-off jobs, each named by a key, run when the clock
// reaches their time. One clock timer is armed, for the earliest job. Jobs
// run one at a time, in time order, on the clock's goroutine (with
// testutil.Clock: inside Advance), so a job must be short; it may call At and
// Cancel. Safe for concurrent use.
type Timers struct {
	clock Clock

	mu     sync.Mutex
	jobs   indexheap.Heap[job, *job]
	byKey  map[string]*job
	armed  *arming // the clock timer set for the earliest job, or nil
	closed bool

	run sync.Mutex // serialises job runs
}

// job is one scheduled function.
type job struct {
	key   string
	at    time.Time
	fn    func()
	index int // in the heap
}

// arming is one clock timer set by Timers.
type arming struct {
	at   time.Time
	stop func() bool
}

// NewTimers returns an empty heap driven by clock (System when nil).
func NewTimers(clock Clock) *Timers {
	if clock == nil {
		clock = System
	}
	return &Timers{clock: clock, byKey: make(map[string]*job)}
}

// At schedules fn to run once the clock reaches at (at once when at has
// passed). A job already scheduled under key is replaced, so scheduling the
// same job again is harmless. After Close, At does nothing.
func (t *Timers) At(key string, at time.Time, fn func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	if j, ok := t.byKey[key]; ok {
		j.at, j.fn = at, fn
		t.jobs.Fix(j)
	} else {
		j := &job{key: key, at: at, fn: fn}
		t.jobs.Push(j)
		t.byKey[key] = j
	}
	t.armLocked()
}

// Cancel removes the job scheduled under key and reports whether there was
// one. A job that has already started is not stopped.
func (t *Timers) Cancel(key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	j, ok := t.byKey[key]
	if !ok {
		return false
	}
	t.jobs.Remove(j)
	delete(t.byKey, key)
	return true
}

// Len returns the number of scheduled jobs.
func (t *Timers) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.jobs.Len()
}

// Next returns the time of the earliest job; ok is false when none is
// scheduled.
func (t *Timers) Next() (at time.Time, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.jobs.Len() == 0 {
		return time.Time{}, false
	}
	return t.jobs.Min().at, true
}

// Close drops every job and disarms the clock timer; jobs already running
// finish. Later calls to At do nothing.
func (t *Timers) Close() {
	t.mu.Lock()
	t.closed = true
	t.jobs = indexheap.Heap[job, *job]{}
	t.byKey = map[string]*job{}
	if t.armed != nil {
		t.armed.stop()
		t.armed = nil
	}
	t.mu.Unlock()
	t.run.Lock() // wait for a running job
	t.run.Unlock()
}

// armLocked makes sure a clock timer is set for the earliest job.
func (t *Timers) armLocked() {
	if t.closed || t.jobs.Len() == 0 {
		return
	}
	at := t.jobs.Min().at
	if t.armed != nil {
		if !t.armed.at.After(at) {
			return // armed early enough; it re-arms when it fires
		}
		t.armed.stop()
	}
	a := &arming{at: at}
	t.armed = a
	a.stop = t.clock.AfterFunc(at.Sub(t.clock.Now()), func() { t.fire(a) })
}

// fire runs the jobs that are due and re-arms for the next one.
func (t *Timers) fire(a *arming) {
	t.run.Lock()
	defer t.run.Unlock()
	for {
		j := t.popDue(a)
		if j == nil {
			return
		}
		// A job's panic is recovered, logged and counted; later jobs run.
		supervise.Do(nil, "timer", j.fn)
	}
}

// popDue removes and returns the earliest due job; when none is due it
// re-arms the clock timer and returns nil.
func (t *Timers) popDue(a *arming) *job {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.armed == a {
		t.armed = nil
	}
	if t.closed || t.jobs.Len() == 0 || t.jobs.Min().at.After(t.clock.Now()) {
		t.armLocked()
		return nil
	}
	j := t.jobs.Pop()
	delete(t.byKey, j.key)
	return j
}

// Less orders jobs by time, then key (so equal times run in a stable
// order).
func (j *job) Less(o *job) bool {
	if !j.at.Equal(o.at) {
		return j.at.Before(o.at)
	}
	return j.key < o.key
}

// HeapIndex is where the job is in the heap (indexheap.Elem).
func (j *job) HeapIndex() *int { return &j.index }
