package dispatch

import (
	"math/bits"
	"slices"
	"sync"
	"time"
)

// Flags of a sent entry.
const (
	sentConfirmable uint8 = 1 << iota
	sentAcked
	sentConfirmed
)

// sentEntry is a delivery made by this node that may still be acked or
// confirmed.
type sentEntry struct {
	send  int64
	at    int64 // Unix seconds of the delivery
	index uint8
	flags uint8
}

// sentBook remembers, per device, the deliveries this node made that await
// an ack or a confirm, so that a device can report only its own deliveries,
// each once. An entry goes when it has been acked (and, for a confirm
// message, confirmed), when the device has more than perDevice entries
// (oldest first) or when it is older than window. Sharded by device.
//
// Other nodes' claims are kept as they came, one sorted list of devices
// per claim, and a device of one gets its entry only when it first
// reports that delivery here: a broadcast on n nodes brings each node the
// claims of every device, of which it sees the receipts of few.
type sentBook struct {
	perDevice int
	window    time.Duration
	shards    [64]sentShard

	foreignMu sync.Mutex
	foreign   map[sendIndex][]*foreignClaim
}

// sendIndex names one command of a send.
type sendIndex struct {
	send  int64
	index uint8
}

// foreignClaim is another node's claim of a command for devices.
type foreignClaim struct {
	at          int64   // Unix seconds of the claim
	devices     []int64 // sorted
	adopted     []uint64
	confirmable bool
}

type sentShard struct {
	mu      sync.Mutex
	devices map[int64][]sentEntry
}

func newSentBook(perDevice int, window time.Duration) *sentBook {
	b := &sentBook{perDevice: perDevice, window: window, foreign: make(map[sendIndex][]*foreignClaim)}
	for i := range b.shards {
		b.shards[i].devices = make(map[int64][]sentEntry)
	}
	return b
}

func (b *sentBook) shard(device int64) *sentShard {
	return &b.shards[(uint64(device)*0x9E3779B97F4A7C15)>>58]
}

// record remembers the delivery of command index of send to device.
func (b *sentBook) record(device, send int64, index int, confirmable bool, now time.Time) {
	e := sentEntry{send: send, index: uint8(index), at: now.Unix()}
	if confirmable {
		e.flags = sentConfirmable
	}
	s := b.shard(device)
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.devices[device]
	if i := find(list, send, index); i >= 0 {
		list[i] = e
		return
	}
	if len(list) >= b.perDevice {
		list = append(list[:0], list[1:]...)
	}
	s.devices[device] = append(list, e)
}

// recordForeign remembers another node's claim of command index of send
// for devices, made at.
func (b *sentBook) recordForeign(devices []int64, send int64, index int, confirmable bool, at time.Time) {
	if len(devices) == 0 {
		return
	}
	if !slices.IsSorted(devices) {
		devices = slices.Sorted(slices.Values(devices))
	}
	c := &foreignClaim{at: at.Unix(), devices: devices, adopted: make([]uint64, (len(devices)+63)/64), confirmable: confirmable}
	k := sendIndex{send, uint8(index)}
	b.foreignMu.Lock()
	b.foreign[k] = append(b.foreign[k], c)
	b.foreignMu.Unlock()
}

// adopt takes device's delivery of command index of send out of the
// foreign claims, once: it returns the entry to record.
func (b *sentBook) adopt(device, send int64, index int) (sentEntry, bool) {
	b.foreignMu.Lock()
	defer b.foreignMu.Unlock()
	for _, c := range b.foreign[sendIndex{send, uint8(index)}] {
		i, found := slices.BinarySearch(c.devices, device)
		if !found || c.adopted[i/64]&(1<<(i%64)) != 0 {
			continue
		}
		c.adopted[i/64] |= 1 << (i % 64)
		e := sentEntry{send: send, index: uint8(index), at: c.at}
		if c.confirmable {
			e.flags = sentConfirmable
		}
		return e, true
	}
	return sentEntry{}, false
}

// report marks an ack or confirm of a delivery and reports whether it is
// new: the delivery is known (made here, or claimed by another node and
// not reported here before), not reported that way before, and a confirm
// is for a confirm message.
func (b *sentBook) report(device, send int64, index int, kind receiptKind) bool {
	s := b.shard(device)
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.devices[device]
	i := find(list, send, index)
	if i < 0 {
		e, ok := b.adopt(device, send, index)
		if !ok {
			return false
		}
		if len(list) >= b.perDevice {
			list = append(list[:0], list[1:]...)
		}
		list = append(list, e)
		s.devices[device] = list
		i = len(list) - 1
	}
	e := &list[i]
	flag := sentAcked
	if kind == receiptConfirm {
		if e.flags&sentConfirmable == 0 {
			return false
		}
		flag = sentConfirmed
	}
	if e.flags&flag != 0 {
		return false
	}
	e.flags |= flag
	if e.flags&sentAcked != 0 && (e.flags&sentConfirmable == 0 || e.flags&sentConfirmed != 0) {
		list = append(list[:i], list[i+1:]...)
		if len(list) == 0 {
			delete(s.devices, device)
		} else {
			s.devices[device] = list
		}
	}
	return true
}

// prune drops entries and foreign claims older than the window.
func (b *sentBook) prune(now time.Time) {
	cutoff := now.Add(-b.window).Unix()
	b.foreignMu.Lock()
	for k, claims := range b.foreign {
		claims = slices.DeleteFunc(claims, func(c *foreignClaim) bool { return c.at < cutoff })
		if len(claims) == 0 {
			delete(b.foreign, k)
		} else {
			b.foreign[k] = claims
		}
	}
	b.foreignMu.Unlock()
	for i := range b.shards {
		s := &b.shards[i]
		s.mu.Lock()
		for dev, list := range s.devices {
			kept := list[:0]
			for _, e := range list {
				if e.at >= cutoff {
					kept = append(kept, e)
				}
			}
			if len(kept) == 0 {
				delete(s.devices, dev)
			} else {
				s.devices[dev] = kept
			}
		}
		s.mu.Unlock()
	}
}

// size returns the number of entries held, and of devices of foreign
// claims not adopted.
func (b *sentBook) size() int {
	n := 0
	b.foreignMu.Lock()
	for _, claims := range b.foreign {
		for _, c := range claims {
			n += len(c.devices)
			for _, w := range c.adopted {
				n -= bits.OnesCount64(w)
			}
		}
	}
	b.foreignMu.Unlock()
	for i := range b.shards {
		s := &b.shards[i]
		s.mu.Lock()
		for _, list := range s.devices {
			n += len(list)
		}
		s.mu.Unlock()
	}
	return n
}

func find(list []sentEntry, send int64, index int) int {
	for i, e := range list {
		if e.send == send && int(e.index) == index {
			return i
		}
	}
	return -1
}
