package throttle

import (
	"container/list"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"time"
)

// DefaultKnownFor is GuardOptions.KnownFor's default.
const DefaultKnownFor = 30 * 24 * time.Hour

// Standing is how a login attempt stands before its check, by what the
// guard knows of its login and address; a password check queue serves the
// better standing first.
type Standing uint8

const (
	// Known: the login has succeeded from this address within KnownFor.
	Known Standing = iota
	// Clean: no failure from the address within the window.
	Clean
	// Failing: the address has failed within the window.
	Failing
)

// Standing returns how an attempt of login from address stands. A nil
// Guard knows nothing: Clean.
func (g *Guard) Standing(login, address string) Standing {
	if g == nil {
		return Clean
	}
	if g.known.has(login, address) {
		return Known
	}
	if n, _ := g.addresses.Failures(address); n > 0 {
		return Failing
	}
	return Clean
}

// knownPairs remembers the (login, address) pairs that succeeded, for a
// while, bounded in number. It keeps a keyed hash of each pair rather than
// the login and address themselves: it only has to recognise them.
type knownPairs struct {
	ttl     time.Duration
	maxKeys int
	clock   func() time.Time

	mu    sync.Mutex
	mac   []byte
	byKey map[knownKey]*list.Element // of *knownEntry
	order list.List                  // by last success, oldest first
}

type knownKey [16]byte

type knownEntry struct {
	key   knownKey
	until int64 // unix nanoseconds
}

func newKnownPairs(ttl time.Duration, maxKeys int, clock func() time.Time) *knownPairs {
	if ttl <= 0 {
		ttl = DefaultKnownFor
	}
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	if clock == nil {
		clock = time.Now
	}
	return &knownPairs{ttl: ttl, maxKeys: maxKeys, clock: clock, mac: []byte(rand.Text()), byKey: map[knownKey]*list.Element{}}
}

func (k *knownPairs) key(login, address string) knownKey {
	h := hmac.New(sha256.New, k.mac)
	var n [8]byte
	for _, part := range [...]string{login, address} {
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write([]byte(part))
	}
	var sum [sha256.Size]byte
	var out knownKey
	copy(out[:], h.Sum(sum[:0]))
	return out
}

// add records a success of login from address.
func (k *knownPairs) add(login, address string) {
	key := k.key(login, address)
	now := k.clock().UnixNano()
	k.mu.Lock()
	defer k.mu.Unlock()
	if el, ok := k.byKey[key]; ok {
		el.Value.(*knownEntry).until = now + int64(k.ttl)
		k.order.MoveToBack(el)
	} else {
		k.byKey[key] = k.order.PushBack(&knownEntry{key: key, until: now + int64(k.ttl)})
	}
	// Oldest first: drop the expired and, beyond the bound, the oldest.
	for front := k.order.Front(); front != nil; front = k.order.Front() {
		e := front.Value.(*knownEntry)
		if len(k.byKey) <= k.maxKeys && e.until > now {
			break
		}
		delete(k.byKey, e.key)
		k.order.Remove(front)
	}
}

// has reports whether login succeeded from address within the TTL.
func (k *knownPairs) has(login, address string) bool {
	key := k.key(login, address)
	now := k.clock().UnixNano()
	k.mu.Lock()
	defer k.mu.Unlock()
	el, ok := k.byKey[key]
	return ok && el.Value.(*knownEntry).until > now
}
