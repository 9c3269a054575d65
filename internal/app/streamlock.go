package app

import (
	"context"
	"hash/maphash"
	"sync"
)

// streamLocks serialises commands on one stream within this process, so
// that concurrent requests for a hot aggregate queue up instead of losing
// optimistic-concurrency races to each other (across processes the expected
// revision still decides). Locks exist only while someone holds or waits
// for them; the map is sharded to keep unrelated streams apart.
type streamLocks struct {
	seed   maphash.Seed
	once   sync.Once
	shards [64]lockShard
	// free holds streamLocks no longer in a map, with their channel empty:
	// nearly every command locks a stream nobody else holds, and making a
	// lock, its channel and two closures each time was 400 B and about
	// 1 µs of an account create.
	free sync.Pool
}

type lockShard struct {
	mu sync.Mutex
	m  map[string]*streamLock
}

type streamLock struct {
	ch   chan struct{} // holds a token while locked
	refs int           // holders and waiters
}

// heldLock is a lock this caller holds; unlock releases it. The zero value
// holds nothing and unlocks nothing.
type heldLock struct {
	l      *streamLocks
	sh     *lockShard
	sl     *streamLock
	stream string
}

// lock blocks until this caller holds stream's lock or ctx ends.
func (l *streamLocks) lock(ctx context.Context, stream string) (heldLock, error) {
	l.once.Do(func() { l.seed = maphash.MakeSeed() })
	sh := &l.shards[maphash.String(l.seed, stream)%uint64(len(l.shards))]
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = make(map[string]*streamLock)
	}
	sl, ok := sh.m[stream]
	if !ok {
		if sl, _ = l.free.Get().(*streamLock); sl == nil {
			sl = &streamLock{ch: make(chan struct{}, 1)}
		}
		sh.m[stream] = sl
	}
	sl.refs++
	sh.mu.Unlock()

	h := heldLock{l: l, sh: sh, sl: sl, stream: stream}
	select { // nearly always free: a one-case select skips locking ctx's channel too
	case sl.ch <- struct{}{}:
		return h, nil
	default:
	}
	select {
	case sl.ch <- struct{}{}:
		return h, nil
	case <-ctx.Done():
		h.release()
		return heldLock{}, ctx.Err()
	}
}

// unlock gives the lock up.
func (h heldLock) unlock() {
	if h.sl == nil {
		return
	}
	<-h.sl.ch
	h.release()
}

// release drops this caller's reference, and the lock with the last one.
func (h heldLock) release() {
	h.sh.mu.Lock()
	h.sl.refs--
	last := h.sl.refs == 0
	if last {
		delete(h.sh.m, h.stream)
	}
	h.sh.mu.Unlock()
	if last {
		// Out of the map and its channel empty (every holder took its
		// token back before releasing): no one can reach it any more.
		h.l.free.Put(h.sl)
	}
}
