package app

import (
	"errors"
	"sync"
	"testing"
	"time"
)

func TestIDAllocatorHandsOutBlocksFromOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.executor(nil, Options{IDBlockSize: 3})
	for want := int64(1); want <= 7; want++ {
		got, err := x.NextID(e.ctx, "account")
		if err != nil || got != want {
			t.Fatalf("NextID = %d, %v; want %d", got, err, want)
		}
	}
	recs := e.read(IDStream("account"))
	if len(recs) != 3 {
		t.Fatalf("id stream has %d events, want 3 blocks", len(recs))
	}
	for i, rec := range recs {
		ev, err := e.reg.Decode(rec.Type, rec.Data)
		if err != nil {
			t.Fatal(err)
		}
		if want := (IDBlockReserved{From: int64(3*i + 1), To: int64(3*i + 3)}); ev != want {
			t.Fatalf("block %d = %+v, want %+v", i, ev, want)
		}
	}
	if x.IDs("account") != x.IDs("account") || x.IDs("account") == x.IDs("device") {
		t.Fatal("IDs must return one allocator per kind")
	}
}

// Three allocators (three nodes) on one store, many goroutines each: no id
// is ever handed out twice.
func TestIDAllocatorsNeverShareAnID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const nodes, workers, each = 3, 16, 150
	var (
		mu   sync.Mutex
		seen = make(map[int64]int)
		wg   sync.WaitGroup
	)
	errs := make(chan error, nodes*workers)
	for n := range nodes {
		x := e.executor(nil, Options{IDBlockSize: 7, RetryDelay: 100 * time.Microsecond})
		for range workers {
			wg.Go(func() {
				for range each {
					id, err := x.NextID(e.ctx, "subscription")
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					if prev, dup := seen[id]; dup {
						t.Errorf("id %d handed out by node %d and node %d", id, prev, n)
					}
					seen[id] = n
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(seen) != nodes*workers*each {
		t.Fatalf("%d distinct ids, want %d", len(seen), nodes*workers*each)
	}
	for id := range seen {
		if id < 1 {
			t.Fatalf("id %d < 1", id)
		}
	}
}

func TestIDAllocatorContinuesAfterRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.executor(nil, Options{IDBlockSize: 10})
	for range 2 {
		if _, err := x.NextID(e.ctx, "device"); err != nil {
			t.Fatal(err)
		}
	}
	restarted := e.executor(nil, Options{IDBlockSize: 10})
	if id, err := restarted.NextID(e.ctx, "device"); err != nil || id != 11 {
		t.Fatalf("after restart NextID = %d, %v; want 11 (the old block's rest is not reused)", id, err)
	}
	if id, err := x.NextID(e.ctx, "device"); err != nil || id != 3 {
		t.Fatalf("old node NextID = %d, %v; want 3 from its block", id, err)
	}
}

func TestIDAllocatorRejectsBadKind(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.executor(nil, Options{})
	for _, kind := range []string{"", "Account", "a-b", "a|b"} {
		var op *OpError
		if _, err := x.NextID(e.ctx, kind); !errors.As(err, &op) || op.Op != "allocate" {
			t.Fatalf("kind %q: err = %v, want an allocate OpError", kind, err)
		}
	}
}
