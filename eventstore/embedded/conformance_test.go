package embedded_test

import (
	"sync"
	"testing"

	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
	"tvsm/eventstore/storetest"
)

func TestConformance(t *testing.T) {
	var dirs sync.Map // *embedded.Store -> its directory
	open := func(t *testing.T, dir string) *embedded.Store {
		t.Helper()
		s, err := embedded.Open(dir, embedded.Options{})
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
