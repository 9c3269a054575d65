package memory_test

import (
	"context"
	"fmt"
	"testing"

	"tvsm/eventstore"
	"tvsm/eventstore/memory"
	"tvsm/eventstore/storetest"
)

// TestConformance runs the suite on a fresh store per test, with the
// durability tests on a store that Reopen hands the same data. It also
// checks the suite itself: a correct store passes it without hanging.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) eventstore.Store {
		s := memory.New()
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, storetest.Features{
		DensePositions: true,
		MultiAppend:    true,
		Reopen: func(t *testing.T, s eventstore.Store) eventstore.Store {
			s2 := s.(*memory.Store).Reopen()
			t.Cleanup(func() { _ = s2.Close() })
			return s2
		},
	})
}

// TestConformanceShared runs the suite on one store shared by all tests and
// holding foreign events, as a real server would.
func TestConformanceShared(t *testing.T) {
	shared := memory.New()
	t.Cleanup(func() { _ = shared.Close() })
	ctx := context.Background()
	for i := range 50 {
		ev := eventstore.EventData{ID: eventstore.NewEventID(), Type: "OrderPlaced.v1"}
		if _, err := shared.Append(ctx, fmt.Sprintf("foreign-%d", i%5), eventstore.Any, ev); err != nil {
			t.Fatal(err)
		}
	}
	storetest.Run(t, func(t *testing.T) eventstore.Store { return shared }, storetest.Features{Shared: true, DensePositions: true, MultiAppend: true})
}
