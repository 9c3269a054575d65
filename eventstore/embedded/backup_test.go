package embedded_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
)

// Given a store under 16 writers, when it is checkpointed, then the copy
// opens as a store of its own holding every append acknowledged before
// the checkpoint began, each once, a prefix of the log that ends where
// the summary says, and nothing the store did not acknowledge.
func TestCheckpointUnderConcurrentWriters(t *testing.T) {
	s := openStore(t, t.TempDir())
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	const writers = 16
	type ack struct {
		stream string
		rev    uint64
		pos    uint64
	}
	var mu sync.Mutex
	var acked []ack
	var wg sync.WaitGroup
	progress := make(chan struct{}, writers)
	for w := range writers {
		wg.Go(func() {
			stream := fmt.Sprintf("cp-%d", w)
			for i := 0; ctx.Err() == nil; i++ {
				res, err := s.Append(ctx, stream, eventstore.Any, event(stream, i))
				if err != nil {
					return // the writers stop with ctx
				}
				mu.Lock()
				acked = append(acked, ack{stream, res.NextExpected, res.Position.Commit})
				mu.Unlock()
				if i == 50 {
					progress <- struct{}{}
				}
			}
		})
	}
	for range writers {
		<-progress // every writer has appended some
	}
	mu.Lock()
	before := append([]ack(nil), acked...)
	mu.Unlock()
	dir := filepath.Join(t.TempDir(), "copy")
	sum, err := s.Checkpoint(ctx, dir)
	stop()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	head, _ := s.Head(context.Background())
	if sum.Last < uint64(len(before)) || sum.Last > head.Commit || sum.Events != sum.Last {
		t.Fatalf("copy through %d (%d events); %d acknowledged before, store head %d", sum.Last, sum.Events, len(before), head.Commit)
	}

	if _, err := embedded.Inspect(dir, true); err != nil {
		t.Fatal(err)
	}
	cp := openStore(t, dir)
	for _, a := range before {
		evs, err := cp.ReadStream(context.Background(), a.stream, eventstore.Exact(a.rev), 1)
		if err != nil || len(evs) != 1 || evs[0].Position.Commit != a.pos {
			t.Fatalf("acknowledged append %s@%d (position %d) in the copy: %v %v", a.stream, a.rev, a.pos, evs, err)
		}
	}
	sub, err := cp.SubscribeAll(context.Background(), eventstore.Beginning, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for n < sum.Last {
		b, err := sub.Recv(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range b.Events {
			n++
			if e.Position.Commit != n {
				t.Fatalf("the copy's event %d is at position %d", n, e.Position.Commit)
			}
		}
		if b.CaughtUp && n < sum.Last {
			t.Fatalf("the copy ends at %d, its summary says %d", n, sum.Last)
		}
	}
	after, _ := cp.Head(context.Background())
	if after.Commit != sum.Last {
		t.Fatalf("the copy's head is %d, its summary says %d", after.Commit, sum.Last)
	}
}

// A checkpoint into a directory that exists is refused and leaves it alone.
func TestCheckpointRefusesAnExistingDirectory(t *testing.T) {
	s := openStore(t, t.TempDir())
	dir := t.TempDir()
	marker := filepath.Join(dir, "keep")
	if err := os.WriteFile(marker, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Checkpoint(context.Background(), dir); err == nil {
		t.Fatal("checkpoint into an existing directory succeeded")
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the existing directory was touched: %v", err)
	}
}

// Inspect refuses a directory without a store, and finds a hole in the
// positions.
func TestInspectRefusesWhatIsNoStore(t *testing.T) {
	if _, err := embedded.Inspect(filepath.Join(t.TempDir(), "none"), true); err == nil {
		t.Fatal("inspect of a missing directory succeeded")
	}
	if _, err := embedded.Inspect(t.TempDir(), true); err == nil {
		t.Fatal("inspect of an empty directory succeeded")
	}
}

// Given a store whose appends are all still in its memtable, when it is
// checkpointed, then the copy carries them in commit log segments (there
// is no flush), Inspect reads them through, and the copy opened as a
// store serves them; a copied segment cut inside a record is refused.
func TestCheckpointCarriesTheUnflushedLog(t *testing.T) {
	s := openStore(t, t.TempDir())
	for i := range 300 {
		if _, err := s.Append(context.Background(), fmt.Sprintf("u-%d", i%7), eventstore.Any, event("u", i)); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "copy")
	sum, err := s.Checkpoint(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "commitlog", "*.seg"))
	if sum.Last != 300 || sum.Events != 300 || len(segs) == 0 {
		t.Fatalf("checkpoint of 300 unflushed events: %+v, segments %v", sum, segs)
	}
	if got, err := embedded.Inspect(dir, true); err != nil || got != sum {
		t.Fatalf("inspect of the copy: %+v %v; the checkpoint said %+v", got, err, sum)
	}

	cut := filepath.Join(t.TempDir(), "cut")
	if err := os.CopyFS(cut, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	last := filepath.Join(cut, "commitlog", filepath.Base(segs[len(segs)-1]))
	info, err := os.Stat(last)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(last, info.Size()-3); err != nil {
		t.Fatal(err)
	}
	if _, err := embedded.Inspect(cut, true); err == nil {
		t.Fatal("inspect of a copy whose last segment is cut inside a record succeeded")
	}

	cp := openStore(t, dir)
	n := 0
	for i := range 7 {
		evs, err := cp.ReadStream(context.Background(), fmt.Sprintf("u-%d", i), eventstore.Start, 0)
		if err != nil {
			t.Fatal(err)
		}
		n += len(evs)
	}
	if head, _ := cp.Head(context.Background()); n != 300 || head.Commit != 300 {
		t.Fatalf("the copy opened as a store holds %d events, head %d", n, head.Commit)
	}
}
