package app

import (
	"errors"

	"sync"
	"testing"
	"time"
	"tvsm/domain"
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

// Given ids reserved for import, when allocators hand out ids, then they
// continue above the imported ones, on every node; an import may create
// under a reserved id and under no other.
func TestImportRangesAreNeverHandedOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	importer := e.executor(nil, Options{IDBlockSize: 10})
	other := e.executor(nil, Options{IDBlockSize: 10})
	meta := RequestMeta{Actor: domain.AdminActor("importer"), RequestID: "import-1"}
	if got, err := other.NextID(e.ctx, "account"); err != nil || got != 1 {
		t.Fatalf("first id = %d, %v; want 1", got, err)
	}
	r, err := importer.IDs("account").ReserveImport(e.ctx, 50, meta)
	if err != nil {
		t.Fatal(err)
	}
	if want := []IDRange{{From: 11, To: 50}}; r.Top != 50 || !equalRanges(r.Ranges, want) {
		t.Fatalf("ReserveImport(50) = %+v, want top 50 and ranges %v", r, want)
	}
	// The other node's block 1..10 is its own; its next block starts
	// above the import.
	for want := int64(2); want <= 10; want++ {
		if got, _ := other.NextID(e.ctx, "account"); got != want {
			t.Fatalf("other node's id = %d, want %d", got, want)
		}
	}
	if got, _ := other.NextID(e.ctx, "account"); got != 51 {
		t.Fatalf("after the import the other node's id = %d, want 51", got)
	}
	if got, _ := importer.NextID(e.ctx, "account"); got != 61 {
		t.Fatalf("the importing node's own id = %d, want 61", got)
	}

	for _, tc := range []struct {
		id int64
		ok bool
	}{{11, true}, {50, true}, {30, true}, {10, false}, {51, false}, {1000, false}, {0, false}} {
		got, err := other.NewID(WithImportID(e.ctx, tc.id), "account")
		switch {
		case tc.ok && (err != nil || got != tc.id):
			t.Errorf("import id %d: NewID = %d, %v; want it", tc.id, got, err)
		case !tc.ok && !errors.Is(err, ErrIDNotImported):
			t.Errorf("import id %d: NewID = %d, %v; want ErrIDNotImported", tc.id, got, err)
		}
	}
	ctx := WithImportID(e.ctx, 12)
	if _, err := other.NewID(ctx, "account"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.NewID(ctx, "account"); !errors.Is(err, ErrIDNotImported) {
		t.Fatalf("a second id in one import = %v, want ErrIDNotImported", err)
	}

	// Reserving again below the top changes nothing; above it, the new
	// range starts after every block handed out, and adjacent import
	// ranges merge.
	if r, err = other.IDs("account").ReserveImport(e.ctx, 40, meta); err != nil || r.Top != 70 || !equalRanges(r.Ranges, []IDRange{{11, 50}}) {
		t.Fatalf("ReserveImport(40) = %+v, %v; want nothing new (top 70)", r, err)
	}
	if r, err = other.IDs("account").ReserveImport(e.ctx, 100, meta); err != nil || !equalRanges(r.Ranges, []IDRange{{11, 50}, {71, 100}}) {
		t.Fatalf("ReserveImport(100) = %+v, %v", r, err)
	}
	if r, err = importer.IDs("account").ReserveImport(e.ctx, 120, meta); err != nil || !equalRanges(r.Ranges, []IDRange{{11, 50}, {71, 120}}) {
		t.Fatalf("ReserveImport(120) from the other node = %+v, %v", r, err)
	}
	if got, _ := importer.NewID(WithImportID(e.ctx, 90), "account"); got != 90 {
		t.Fatalf("an id reserved by the other node is not importable here: %d", got)
	}
	if got, _ := e.executor(nil, Options{IDBlockSize: 10}).NextID(e.ctx, "account"); got != 121 {
		t.Fatalf("a third node's first id = %d, want 121", got)
	}
}

func equalRanges(a, b []IDRange) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
