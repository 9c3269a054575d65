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
}

type lockShard struct {
	mu sync.Mutex
	m  map[string]*streamLock
}

type streamLock struct {
	ch   chan struct{} // holds a token while locked
	refs int           // holders and waiters
}

// lock blocks until this caller holds stream's lock or ctx ends. The
// returned function releases it.
func (l *streamLocks) lock(ctx context.Context, stream string) (func(), error) {
	l.once.Do(func() { l.seed = maphash.MakeSeed() })
	sh := &l.shards[maphash.String(l.seed, stream)%uint64(len(l.shards))]
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = make(map[string]*streamLock)
	}
	sl, ok := sh.m[stream]
	if !ok {
		sl = &streamLock{ch: make(chan struct{}, 1)}
		sh.m[stream] = sl
	}
	sl.refs++
	sh.mu.Unlock()

	release := func() {
		sh.mu.Lock()
		sl.refs--
		if sl.refs == 0 {
			delete(sh.m, stream)
		}
		sh.mu.Unlock()
	}
	select {
	case sl.ch <- struct{}{}:
		return func() { <-sl.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}
