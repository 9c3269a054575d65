package wsgateway

import (
	"sync"
	"time"
)

// Registered is a registered connection as a delivery round sees it: who,
// and since when.
type Registered struct {
	Device, Account int64
	ConnectedAt     time.Time
	conn            *Conn
}

// byProvider lists the registered connections of each provider in one
// slice, so that a round over many devices reads contiguous memory rather
// than visiting every connection. A connection knows its place in its
// provider's slice (Conn.slot), so leaving is a swap with the last one.
// Registering and unregistering update it under the device's shard lock,
// so it always agrees with the shards.
type byProvider struct {
	mu    sync.RWMutex
	lists map[int64][]Registered
}

// replace puts c in place of old (nil: none), the device's connection
// before it.
func (b *byProvider) replace(old, c *Conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lists == nil {
		b.lists = make(map[int64][]Registered)
	}
	if old != nil {
		b.removeLocked(old)
	}
	p := c.id.Provider
	c.slot = len(b.lists[p])
	b.lists[p] = append(b.lists[p], Registered{Device: c.deviceID, Account: c.id.Account, ConnectedAt: c.connectedAt, conn: c})
}

// remove takes c out.
func (b *byProvider) remove(c *Conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.removeLocked(c)
}

func (b *byProvider) removeLocked(c *Conn) {
	p := c.id.Provider
	list := b.lists[p]
	i := c.slot
	if i < 0 || i >= len(list) || list[i].conn != c {
		return
	}
	last := len(list) - 1
	if i != last {
		list[i] = list[last]
		list[i].conn.slot = i
	}
	list[last] = Registered{} // drop the pointer
	c.slot = -1
	if last == 0 {
		delete(b.lists, p)
		return
	}
	b.lists[p] = list[:last]
}

// rangeProvider calls fn for each connection of provider until fn returns
// false.
func (b *byProvider) rangeProvider(provider int64, fn func(Registered) bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, r := range b.lists[provider] {
		if !fn(r) {
			return
		}
	}
}

// count returns how many connections provider has.
func (b *byProvider) count(provider int64) int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.lists[provider])
}

// rangeAll calls fn for each connection until fn returns false.
func (b *byProvider) rangeAll(fn func(provider int64, r Registered) bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for p, list := range b.lists {
		for _, r := range list {
			if !fn(p, r) {
				return
			}
		}
	}
}

// RangeProvider calls fn for every registered connection of provider's
// devices until fn returns false. fn runs under a read lock that holds
// back connections registering and leaving: it must be quick and must not
// call the hub.
func (h *Hub) RangeProvider(provider int64, fn func(Registered) bool) {
	h.providers.rangeProvider(provider, fn)
}

// ProviderCount returns how many registered connections provider's
// devices have.
func (h *Hub) ProviderCount(provider int64) int {
	return h.providers.count(provider)
}

// RangeRegistered calls fn for every registered connection, with its
// provider, until fn returns false; as RangeProvider, fn must be quick and
// must not call the hub.
func (h *Hub) RangeRegistered(fn func(provider int64, r Registered) bool) {
	h.providers.rangeAll(fn)
}
