package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
)

func openStore(t testing.TB, dir string) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func event(key string, i int) eventstore.EventData {
	return eventstore.EventData{ID: eventstore.DeriveEventID(key, i), Type: "Test.v1", Data: []byte(fmt.Sprintf(`{"i":%d}`, i))}
}

// Appends waiting together share one fsync: with many concurrent appenders
// the store makes far fewer group commits than appends.
func TestGroupCommitSharesFsync(t *testing.T) {
	s := openStore(t, t.TempDir())
	ctx := context.Background()
	fsyncsBefore := s.Fsyncs()
	const writers, each = 64, 20
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		go func() {
			for i := 0; i < each; i++ {
				_, err := s.Append(ctx, fmt.Sprintf("g-%d", w), eventstore.Any, event(fmt.Sprintf("g-%d", w), i))
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for w := 0; w < writers; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	groups, appends := s.Stats()
	if appends != writers*each {
		t.Fatalf("appends = %d, want %d", appends, writers*each)
	}
	fsyncs := s.Fsyncs() - fsyncsBefore
	if groups >= appends || fsyncs >= appends {
		t.Fatalf("%d groups and %d fsyncs for %d appends: no append shared an fsync", groups, fsyncs, appends)
	}
	t.Logf("%d appends in %d group commits and %d fsyncs (%.1f appends per fsync)", appends, groups, fsyncs, float64(appends)/float64(fsyncs))
}

// A closed store refuses appends and ends subscriptions with ErrClosed.
func TestClosedStore(t *testing.T) {
	s, err := embedded.Open(t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sub, err := s.SubscribeAll(ctx, eventstore.Beginning, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Recv(ctx); err != nil { // caught-up batch on an empty store
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { _, err := sub.Recv(ctx); got <- err }()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wantClosed(t, got, 5*time.Second, "Recv after Close")
	if _, err := s.Append(ctx, "x", eventstore.Any, event("x", 0)); !errors.Is(err, eventstore.ErrClosed) {
		t.Fatalf("Append after Close: %v, want ErrClosed", err)
	}
}

// Close while appends are in flight answers every one of them: an append
// acknowledged before is durable, one the committer did not take fails with
// ErrClosed and is not stored, and none waits forever.
func TestCloseAnswersAppendsInFlight(t *testing.T) {
	dir := t.TempDir()
	s, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const writers = 64
	acked := make([]int, writers)
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			stream := fmt.Sprintf("q-%d", w)
			for i := 0; ; i++ {
				expect := eventstore.NoStream
				if i > 0 {
					expect = eventstore.Exact(uint64(i - 1))
				}
				if _, err := s.Append(ctx, stream, expect, event(stream, i)); err != nil {
					errs <- err
					return
				}
				acked[w]++
			}
		}()
	}
	for {
		if _, appends := s.Stats(); appends >= 2000 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for range writers {
		wantClosed(t, errs, 10*time.Second, "append during Close")
	}
	r := openStore(t, dir)
	for w, n := range acked {
		got, err := r.ReadStream(ctx, fmt.Sprintf("q-%d", w), eventstore.Start, 0)
		if err != nil && !errors.Is(err, eventstore.ErrStreamNotFound) {
			t.Fatal(err)
		}
		if len(got) != n {
			t.Fatalf("stream q-%d holds %d events after reopening; %d appends were acknowledged", w, len(got), n)
		}
	}
}

// A second Open of the same directory fails while the first holds it, so two
// processes can never write one log.
func TestOpenLocksDirectory(t *testing.T) {
	dir := t.TempDir()
	openStore(t, dir)
	if s, err := embedded.Open(dir, embedded.Options{}); err == nil {
		s.Close()
		t.Fatal("second Open of a directory in use succeeded")
	}
}

// wantClosed fails t unless what, answering on got within the given time,
// answers ErrClosed.
func wantClosed(t *testing.T, got <-chan error, within time.Duration, what string) {
	t.Helper()
	select {
	case err := <-got:
		if !errors.Is(err, eventstore.ErrClosed) {
			t.Fatalf("%s: %v, want ErrClosed", what, err)
		}
	case <-time.After(within):
		t.Fatalf("%s: no answer within %v", what, within)
	}
}
