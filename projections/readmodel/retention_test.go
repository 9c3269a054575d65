package readmodel

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/projections"
)

// Given accounts deleted at different times, one of them erased since and
// one erased without being deleted, DeletedBefore lists those deleted
// before the time and not erased, also after a snapshot round trip.
func TestDeletedBefore(t *testing.T) {
	m := New(nil)
	m.SealSnapshots(&testSealer{erased: map[int64]bool{}})
	f := newFeed()
	applyTypical(t, m, f, 10, 2)
	day := func(n int) time.Time { return base.Add(time.Duration(n) * 24 * time.Hour) }
	apply := func(id int64, e domain.Event, at time.Time) {
		t.Helper()
		if err := m.Apply(t.Context(), decoded(m, []eventstore.RecordedEvent{f.record(domain.AccountStream(id), e, at)}), projections.Live); err != nil {
			t.Fatal(err)
		}
	}
	apply(2, domain.AccountDeleted{AccountID: 2}, day(10))
	apply(3, domain.AccountDeleted{AccountID: 3}, day(20))
	apply(4, domain.AccountDeleted{AccountID: 4}, day(30))
	apply(5, domain.AccountDeleted{AccountID: 5}, day(5))
	apply(5, domain.AccountErased{AccountID: 5, WasDeleted: true}, day(6))
	apply(6, domain.AccountErased{AccountID: 6}, day(7))

	check := func(m *Model) {
		t.Helper()
		if got := m.DeletedBefore(day(25), 0); !slices.Equal(got, []int64{2, 3}) {
			t.Errorf("deleted before day 25: %v, want [2 3]", got)
		}
		if got := m.DeletedBefore(day(31), 2); !slices.Equal(got, []int64{2, 3}) {
			t.Errorf("at most 2 deleted before day 31: %v", got)
		}
		if got := m.DeletedBefore(day(1), 0); len(got) != 0 {
			t.Errorf("deleted before day 1: %v", got)
		}
	}
	check(m)
	if got := m.ErasedAccounts(); !slices.Equal(got, []int64{5, 6}) {
		t.Errorf("erased accounts: %v, want [5 6]", got)
	}
	path := filepath.Join(t.TempDir(), "rm.snap")
	if _, err := m.WriteSnapshot(path); err != nil {
		t.Fatal(err)
	}
	loaded := New(nil)
	loaded.SealSnapshots(&testSealer{erased: map[int64]bool{}})
	if _, err := loaded.LoadSnapshot(path); err != nil {
		t.Fatal(err)
	}
	check(loaded)
	if got := loaded.ErasedAccounts(); !slices.Equal(got, []int64{5, 6}) {
		t.Errorf("erased accounts after a snapshot: %v, want [5 6]", got)
	}
}
