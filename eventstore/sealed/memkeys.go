package sealed

import (
	"context"
	"sync"
)

// MemKeys is a key store in memory, for tests and tools that run on the
// in-memory event store: erasing drops the key from memory.
type MemKeys struct {
	mu     sync.Mutex
	keys   map[int64]WrappedKey
	erased map[int64]bool
}

// NewMemKeys returns an empty key store in memory.
func NewMemKeys() *MemKeys { return newMemKeys() }

func newMemKeys() *MemKeys {
	return &MemKeys{keys: map[int64]WrappedKey{}, erased: map[int64]bool{}}
}

// Load implements KeyStore.
func (s *MemKeys) Load(_ context.Context, subject int64) (WrappedKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.erased[subject] {
		return WrappedKey{}, ErrErased
	}
	k, ok := s.keys[subject]
	if !ok {
		return WrappedKey{}, ErrNoKey
	}
	return k, nil
}

// Create implements KeyStore.
func (s *MemKeys) Create(_ context.Context, subject int64, k WrappedKey) (WrappedKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.erased[subject] {
		return WrappedKey{}, ErrErased
	}
	if have, ok := s.keys[subject]; ok {
		return have, nil
	}
	s.keys[subject] = k
	return k, nil
}

// Erase implements KeyStore.
func (s *MemKeys) Erase(_ context.Context, subject int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.keys, subject)
	s.erased[subject] = true
	return nil
}

// Rewrap implements KeyStore.
func (s *MemKeys) Rewrap(_ context.Context, from, to *MasterKey) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for subject, k := range s.keys {
		if k.Master != from.fingerprint {
			continue
		}
		next, err := rewrap(from, to, subject, k)
		if err != nil {
			return n, err
		}
		s.keys[subject] = next
		n++
	}
	return n, nil
}

// Close implements KeyStore.
func (s *MemKeys) Close() error { return nil }
