package readmodel

import (
	"slices"
	"time"
)

// DeletedBefore returns the ids of the accounts deleted before t and not
// erased yet, in ascending order, at most limit of them (all when limit
// <= 0): what a retention rule erases.
func (m *Model) DeletedBefore(t time.Time, limit int) []int64 {
	var ids []int64
	m.read(func(s *state) {
		for id, ts := range s.deleted {
			if !ts.erased && ts.at != 0 && ts.at.Unix() < t.Unix() {
				ids = append(ids, id)
			}
		}
	})
	slices.Sort(ids)
	if limit > 0 && len(ids) > limit {
		ids = ids[:limit]
	}
	return ids
}

// ErasedAccounts returns the ids of the accounts erased, in ascending
// order: what a node's keyring must know at start to show the events of an
// erased account written before sealing as erased.
func (m *Model) ErasedAccounts() []int64 {
	var ids []int64
	m.read(func(s *state) {
		for id, ts := range s.deleted {
			if ts.erased {
				ids = append(ids, id)
			}
		}
	})
	slices.Sort(ids)
	return ids
}
