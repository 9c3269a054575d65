package app

import (
	"container/list"
	"sync"

	"tvsm/eventstore"
)

// snapshot is an aggregate's state as of a revision of its stream. It is a
// true prefix of the stream (events are immutable), so a snapshot is never
// wrong, only possibly old: Execute catches it up or lets the append's
// expected revision reveal that it is old.
type snapshot struct {
	state  any
	exists bool   // the stream has events; rev is meaningful
	rev    uint64 // revision of the last event folded into state
	pos    eventstore.Position
}

// stateCache is a bounded least-recently-used map from stream to snapshot.
// A nil *stateCache (cache disabled) holds nothing.
type stateCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // front = most recently used; values are *cacheItem
	items map[string]*list.Element
}

type cacheItem struct {
	stream string
	snap   snapshot
}

func newStateCache(max int) *stateCache {
	if max < 0 {
		return nil
	}
	return &stateCache{max: max, order: list.New(), items: make(map[string]*list.Element)}
}

func (c *stateCache) get(stream string) (snapshot, bool) {
	if c == nil {
		return snapshot{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[stream]
	if !ok {
		return snapshot{}, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheItem).snap, true
}

// put stores snap unless the cache already holds a newer revision of the
// stream (a concurrent caller got further).
func (c *stateCache) put(stream string, snap snapshot) {
	if c == nil || !snap.exists {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[stream]; ok {
		it := el.Value.(*cacheItem)
		if it.snap.rev <= snap.rev {
			it.snap = snap
		}
		c.order.MoveToFront(el)
		return
	}
	c.items[stream] = c.order.PushFront(&cacheItem{stream: stream, snap: snap})
	for c.order.Len() > c.max {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.items, old.Value.(*cacheItem).stream)
	}
}

func (c *stateCache) drop(stream string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[stream]; ok {
		c.order.Remove(el)
		delete(c.items, stream)
	}
}

func (c *stateCache) len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
