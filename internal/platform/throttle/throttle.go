// Package throttle limits failed attempts per key, such as a login or a
// client address, in memory: after Limit failures within a sliding Window a
// key is refused until its oldest failure in the window ages out.
//
// Memory is bounded under attack: at most MaxKeys keys are tracked, and when
// a new key would exceed that, the key whose last failure is the oldest is
// forgotten (keys whose failures all left the window go first). An
// attacker who sprays more than MaxKeys distinct keys within one window can
// thus make the limiter forget a key early; a per-address limit next to
// the per-login one (Guard) makes that expensive.
package throttle

import (
	"container/list"
	"sync"
	"time"
)

// Defaults of Options and GuardOptions.
const (
	DefaultLimit        = 5
	DefaultAddressLimit = 20
	DefaultWindow       = time.Minute
	DefaultMaxKeys      = 100_000
)

// Options configure a Limiter. Zero fields take the defaults.
type Options struct {
	// Limit is the number of failures a key may have within Window before
	// it is refused (default DefaultLimit).
	Limit int
	// Window is the sliding window failures are counted over (default
	// DefaultWindow).
	Window time.Duration
	// MaxKeys bounds the keys tracked (default DefaultMaxKeys).
	MaxKeys int
	// Clock is the time source (default time.Now); tests inject one.
	Clock func() time.Time
}

func (o Options) withDefaults() Options {
	if o.Limit <= 0 {
		o.Limit = DefaultLimit
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.MaxKeys <= 0 {
		o.MaxKeys = DefaultMaxKeys
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	return o
}

// Limiter counts failures per string key; see Keyed.
type Limiter = Keyed[string]

// New returns a limiter with opts.
func New(opts Options) *Limiter { return NewKeyed[string](opts) }

// Keyed counts failures per key in a sliding window. It is safe for
// concurrent use.
type Keyed[K comparable] struct {
	opts Options

	mu    sync.Mutex
	keys  map[K]*list.Element // of *entry[K]
	order list.List           // by last failure, oldest first
}

// entry is one key's failures within the window, oldest first; at most
// Limit are kept, since more never change the answer.
type entry[K comparable] struct {
	key   K
	times []int64 // unix nanoseconds
}

// NewKeyed returns a limiter with opts, for keys of type K (a struct of
// a login and an address, for one).
func NewKeyed[K comparable](opts Options) *Keyed[K] {
	return &Keyed[K]{opts: opts.withDefaults(), keys: make(map[K]*list.Element)}
}

// Allow reports whether key may make another attempt now; when it may not,
// retryAfter is how long until it may.
func (l *Keyed[K]) Allow(key K) (ok bool, retryAfter time.Duration) {
	n, wait := l.Failures(key)
	return n < l.opts.Limit, wait
}

// Failures returns how many failures of key lie within the window (at most
// Limit: more are not kept) and, when that is Limit, how long until the
// oldest of them leaves it.
func (l *Keyed[K]) Failures(key K) (n int, retryAfter time.Duration) {
	now := l.opts.Clock().UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	el, found := l.keys[key]
	if !found {
		return 0, 0
	}
	e := el.Value.(*entry[K])
	e.expire(now - int64(l.opts.Window))
	if len(e.times) == 0 {
		// Every tracked entry has a failure in the window: forgetExpired
		// orders entries by their last one.
		l.remove(el)
		return 0, 0
	}
	if len(e.times) < l.opts.Limit {
		return len(e.times), 0
	}
	// The oldest of the Limit failures in the window frees a slot when it
	// leaves the window.
	return len(e.times), time.Duration(e.times[len(e.times)-l.opts.Limit] + int64(l.opts.Window) - now)
}

// Limit returns the failures a key may have within the window.
func (l *Keyed[K]) Limit() int { return l.opts.Limit }

// Fail records a failed attempt of key.
func (l *Keyed[K]) Fail(key K) {
	now := l.opts.Clock().UnixNano()
	horizon := now - int64(l.opts.Window)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forgetExpired(horizon)
	el, found := l.keys[key]
	if !found {
		if len(l.keys) >= l.opts.MaxKeys {
			l.remove(l.order.Front())
		}
		el = l.order.PushBack(&entry[K]{key: key, times: make([]int64, 0, min(l.opts.Limit, 8))})
		l.keys[key] = el
	} else {
		l.order.MoveToBack(el)
	}
	e := el.Value.(*entry[K])
	e.expire(horizon)
	if len(e.times) == l.opts.Limit {
		e.times = append(e.times[:0], e.times[1:]...)
	}
	e.times = append(e.times, now)
}

// Succeed forgets key's failures: a successful login starts afresh.
func (l *Keyed[K]) Succeed(key K) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if el, found := l.keys[key]; found {
		l.remove(el)
	}
}

// Len returns the number of keys tracked.
func (l *Keyed[K]) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

// forgetExpired drops keys whose last failure left the window. They are at
// the front, the order being by last failure. Allow drops an entry it
// empties, so none is empty here; one that were would count as expired.
func (l *Keyed[K]) forgetExpired(horizon int64) {
	for el := l.order.Front(); el != nil; el = l.order.Front() {
		e := el.Value.(*entry[K])
		if n := len(e.times); n > 0 && e.times[n-1] > horizon {
			return
		}
		l.remove(el)
	}
}

func (l *Keyed[K]) remove(el *list.Element) {
	delete(l.keys, el.Value.(*entry[K]).key)
	l.order.Remove(el)
}

// expire drops the failures at or before horizon.
func (e *entry[K]) expire(horizon int64) {
	i := 0
	for i < len(e.times) && e.times[i] <= horizon {
		i++
	}
	if i > 0 {
		e.times = append(e.times[:0], e.times[i:]...)
	}
}
