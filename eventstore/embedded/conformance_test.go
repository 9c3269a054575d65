package embedded_test

import (
	"sync"
	"testing"

	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
	"tvsm/eventstore/storetest"
)

func TestConformance(t *testing.T) {
	conformance(t, embedded.Options{})
}

// The same suite while the committer's key filters rotate every few keys:
// lookups keep finding ids and heads whose filter is gone once pebble has
// flushed them (recent.go).
func TestConformanceRotatingKeyFilters(t *testing.T) {
	conformance(t, embedded.WithSmallKeyFilters(embedded.Options{}, 5))
}

func conformance(t *testing.T, opts embedded.Options) {
	var dirs sync.Map // *embedded.Store -> its directory
	open := func(t *testing.T, dir string) *embedded.Store {
		t.Helper()
		s, err := embedded.Open(dir, opts)
		if err != nil {
			t.Fatalf("open %s: %v", dir, err)
		}
		dirs.Store(s, dir)
		t.Cleanup(func() { _ = s.Close() }) // may already be closed by Reopen
		return s
	}
	storetest.Run(t,
		func(t *testing.T) eventstore.Store { return open(t, t.TempDir()) },
		storetest.Features{
			DensePositions: true,
			MultiAppend:    true,
			Reopen: func(t *testing.T, s eventstore.Store) eventstore.Store {
				t.Helper()
				dir, ok := dirs.Load(s)
				if !ok {
					t.Fatal("reopen: unknown store")
				}
				if err := s.(*embedded.Store).Close(); err != nil {
					t.Fatalf("close: %v", err)
				}
				return open(t, dir.(string))
			},
		})
}
