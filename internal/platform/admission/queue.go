// Package admission orders work that needs one of a few slots (password
// checks) when more arrives than the slots can take. Waiters are served by
// lane, the most trusted first, and within a lane round-robin over keys
// (client addresses), so that one busy key cannot starve the others of its
// lane. A waiter that cannot start within MaxWait, by the queue's estimate
// or in fact, is refused with ErrOverloaded: only then is the node itself
// overloaded.
package admission

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Lane is a waiter's class; a lower lane is served first.
type Lane uint8

// The lanes, most trusted first.
const (
	// Trusted: the caller has succeeded before (a login that succeeded
	// from this address).
	Trusted Lane = iota
	// Clean: nothing known against the caller (no recent failure from its
	// address).
	Clean
	// Suspect: the caller's address has failed recently.
	Suspect

	laneCount = int(Suspect) + 1
)

func (l Lane) String() string {
	switch l {
	case Trusted:
		return "trusted"
	case Clean:
		return "clean"
	case Suspect:
		return "suspect"
	}
	return "lane(" + string(rune('0'+l)) + ")"
}

// Defaults of Options.
const (
	DefaultMaxWait   = 2 * time.Second
	DefaultMaxQueued = 1024
)

// Options configure a Queue. Zero fields take the defaults.
type Options struct {
	// Slots is how many may hold a slot at once (at least one).
	Slots int
	// Reserved is how many slots beyond Slots only the Trusted lane may
	// take: trusted callers need not wait for the others' work to end.
	Reserved int
	// MaxWait bounds a waiter's wait for a slot (default DefaultMaxWait).
	MaxWait time.Duration
	// MaxQueued bounds the waiters (default DefaultMaxQueued). When it is
	// reached, a newcomer takes the place of the newest waiter of a lower
	// lane, or is refused when there is none.
	MaxQueued int
	// Clock is the time source for the hold estimate (default time.Now).
	Clock func() time.Time
}

// ErrOverloaded is what Acquire returns when the slot could not be had
// within MaxWait.
var ErrOverloaded = errors.New("overloaded")

// Queue hands out slots. It is safe for concurrent use.
type Queue struct {
	slots     int
	reserved  int
	maxWait   time.Duration
	maxQueued int
	now       func() time.Time

	mu     sync.Mutex
	busy   int // slots held, reserved ones included
	others int // slots held by callers other than Trusted
	queued int
	lanes  [laneCount]lane
	// hold is a moving average of how long a slot is held; zero until the
	// first release. It turns the waiters ahead into a wait estimate.
	hold time.Duration

	granted, refused atomic.Uint64
}

// lane holds one lane's waiters, per key, oldest first, and the keys with
// waiters in the order they are served.
type lane struct {
	byKey map[string]*keyWaiters
	ring  list.List // of *keyWaiters; the front is served next
	n     int
}

type keyWaiters struct {
	key     string
	waiters list.List // of *waiter, oldest first
	inRing  *list.Element
}

type waiter struct {
	ready   chan struct{} // closed once granted or evicted
	granted bool
	start   time.Time // when granted
	lane    Lane
	kw      *keyWaiters
	el      *list.Element
}

// New returns a queue with o.
func New(o Options) *Queue {
	if o.MaxWait <= 0 {
		o.MaxWait = DefaultMaxWait
	}
	if o.MaxQueued <= 0 {
		o.MaxQueued = DefaultMaxQueued
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	q := &Queue{slots: max(1, o.Slots), reserved: max(0, o.Reserved), maxWait: o.MaxWait, maxQueued: o.MaxQueued, now: o.Clock}
	for i := range q.lanes {
		q.lanes[i].byKey = map[string]*keyWaiters{}
	}
	return q
}

// Acquire waits for a slot for key in lane l and returns the function that
// gives it back (once; later calls do nothing). It returns ErrOverloaded at
// once when the waiters ahead would keep it waiting longer than MaxWait,
// and after MaxWait when it got no slot; ctx's error when ctx ends first.
func (q *Queue) Acquire(ctx context.Context, l Lane, key string) (release func(), err error) {
	l = min(l, Suspect)
	q.mu.Lock()
	if q.free(l) && q.waitingUpTo(l) == 0 {
		q.take(l)
		start := q.now()
		q.mu.Unlock()
		q.granted.Add(1)
		return q.releaser(l, start), nil
	}
	if q.estimate(l) > q.maxWait || q.queued >= q.maxQueued && !q.evictBelow(l) {
		q.mu.Unlock()
		q.refused.Add(1)
		return nil, ErrOverloaded
	}
	w := q.enqueue(l, key)
	q.mu.Unlock()

	timer := time.NewTimer(q.maxWait)
	defer timer.Stop()
	var ctxErr error
	select {
	case <-w.ready:
	case <-timer.C:
	case <-ctx.Done():
		ctxErr = ctx.Err()
	}
	q.mu.Lock()
	granted := w.granted
	if !granted && w.el != nil {
		q.remove(w)
	}
	q.mu.Unlock()
	switch {
	case granted:
		// Granted as the wait ended: the slot is the caller's anyway.
		q.granted.Add(1)
		return q.releaser(l, w.start), nil
	case ctxErr != nil:
		return nil, ctxErr
	}
	q.refused.Add(1)
	return nil, ErrOverloaded
}

// Stats returns how many slots were granted and how many waiters were
// refused (ErrOverloaded), and how many wait now.
func (q *Queue) Stats() (granted, refused uint64, waiting int) {
	q.mu.Lock()
	waiting = q.queued
	q.mu.Unlock()
	return q.granted.Load(), q.refused.Load(), waiting
}

// releaser returns the release of a slot a caller of lane l has held since
// start.
func (q *Queue) releaser(l Lane, start time.Time) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			q.mu.Lock()
			defer q.mu.Unlock()
			q.observe(q.now().Sub(start))
			q.busy--
			if l != Trusted {
				q.others--
			}
			q.grant()
		})
	}
}

// free reports whether a caller of lane l may take a slot now: Trusted
// ones any of Slots+Reserved, the others one of Slots.
func (q *Queue) free(l Lane) bool {
	if q.busy >= q.slots+q.reserved {
		return false
	}
	return l == Trusted || q.others < q.slots
}

// take counts a slot taken by a caller of lane l.
func (q *Queue) take(l Lane) {
	q.busy++
	if l != Trusted {
		q.others++
	}
}

// observe folds a slot's hold time into the moving average (weight 1/8).
func (q *Queue) observe(d time.Duration) {
	if d < 0 {
		return
	}
	if q.hold == 0 {
		q.hold = d
		return
	}
	q.hold += (d - q.hold) / 8
}

// limit is how many slots may be held when a caller of lane l takes one.
func (q *Queue) limit(l Lane) int {
	if l == Trusted {
		return q.slots + q.reserved
	}
	return q.slots
}

// estimate is how long a newcomer in lane l would wait: the waiters that
// go before it, and itself, served Slots at a time. Zero until a hold time
// is known.
func (q *Queue) estimate(l Lane) time.Duration {
	rounds := q.waitingUpTo(l)/q.limit(l) + 1
	return time.Duration(rounds) * q.hold
}

// waitingUpTo counts the waiters of lanes up to l: those served before a
// newcomer of lane l.
func (q *Queue) waitingUpTo(l Lane) int {
	n := 0
	for i := 0; i <= int(l); i++ {
		n += q.lanes[i].n
	}
	return n
}

// grant gives free slots to the waiters next in line: trusted ones first,
// which may also take the reserved slots.
func (q *Queue) grant() {
	for q.queued > 0 {
		var w *waiter
		switch {
		case q.lanes[Trusted].n > 0 && q.free(Trusted):
			w = q.lanes[Trusted].next()
		case q.lanes[Trusted].n < q.queued && q.free(Clean):
			w = q.nextOther()
		default:
			return
		}
		q.remove(w)
		w.granted, w.start = true, q.now()
		q.take(w.lane)
		close(w.ready)
	}
}

// nextOther returns the waiter other than Trusted served next: the most
// trusted lane with waiters, the key at the front of its ring, that key's
// oldest waiter.
func (q *Queue) nextOther() *waiter {
	for i := Clean; int(i) < laneCount; i++ {
		if q.lanes[i].n > 0 {
			return q.lanes[i].next()
		}
	}
	panic("admission: no waiter other than trusted ones while some are queued")
}

// next returns the lane's waiter served next, the oldest of the key at the
// front of the ring, and moves that key to the back. The lane has waiters.
func (ln *lane) next() *waiter {
	kw := ln.ring.Front().Value.(*keyWaiters)
	ln.ring.MoveToBack(kw.inRing)
	return kw.waiters.Front().Value.(*waiter)
}

// enqueue adds a waiter for key to lane l.
func (q *Queue) enqueue(l Lane, key string) *waiter {
	ln := &q.lanes[l]
	kw, ok := ln.byKey[key]
	if !ok {
		kw = &keyWaiters{key: key}
		kw.inRing = ln.ring.PushBack(kw)
		ln.byKey[key] = kw
	}
	w := &waiter{ready: make(chan struct{}), lane: l, kw: kw}
	w.el = kw.waiters.PushBack(w)
	ln.n++
	q.queued++
	return w
}

// remove takes w out of its lane.
func (q *Queue) remove(w *waiter) {
	ln := &q.lanes[w.lane]
	kw := w.kw
	kw.waiters.Remove(w.el)
	w.el = nil
	ln.n--
	q.queued--
	if kw.waiters.Len() == 0 {
		ln.ring.Remove(kw.inRing)
		delete(ln.byKey, kw.key)
	}
}

// evictBelow refuses the newest waiter of the least trusted lane below l
// to make room, reporting whether there was one.
func (q *Queue) evictBelow(l Lane) bool {
	for i := laneCount - 1; i > int(l); i-- {
		ln := &q.lanes[i]
		if ln.n == 0 {
			continue
		}
		// The key served last, its newest waiter.
		kw := ln.ring.Back().Value.(*keyWaiters)
		w := kw.waiters.Back().Value.(*waiter)
		q.remove(w)
		close(w.ready) // not granted: it answers ErrOverloaded
		return true
	}
	return false
}
