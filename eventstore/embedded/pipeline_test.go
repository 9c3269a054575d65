package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
)

// heldFsyncer makes fsyncs wait, once armed, until the test lets them go,
// and fails them with fail when that is set.
type heldFsyncer struct {
	armed   atomic.Bool
	fail    atomic.Pointer[error]
	entered chan struct{} // an armed fsync has started
	release chan struct{} // lets one armed fsync finish
}

func newHeldFsyncer() *heldFsyncer {
	return &heldFsyncer{entered: make(chan struct{}, 64), release: make(chan struct{}, 64)}
}

func (h *heldFsyncer) SyncData(fd uintptr) error { return h.sync(fd, syscall.Fdatasync) }
func (h *heldFsyncer) Sync(fd uintptr) error     { return h.sync(fd, syscall.Fsync) }

func (h *heldFsyncer) sync(fd uintptr, call func(int) error) error {
	if h.armed.Load() {
		h.entered <- struct{}{}
		<-h.release
		if errp := h.fail.Load(); errp != nil {
			return *errp
		}
	}
	return call(int(fd))
}

func openWithFsyncer(t *testing.T, fsyncer embedded.Fsyncer) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(t.TempDir(), embedded.WithFsyncer(embedded.Options{}, fsyncer))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func appendAsync(s *embedded.Store, stream string) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := s.Append(context.Background(), stream, eventstore.NoStream, event(stream, 0))
		done <- err
	}()
	return done
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func requireNotDone(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s answered (%v) before its fsync finished", what, err)
	default:
	}
}

// While one group waits for its fsync the committer takes the next one,
// whose retry of the first group's events and own events are answered only
// after that fsync: no reply, and no read, ever gets ahead of durability.
func TestGroupsAreAcknowledgedInOrderAfterTheirFsync(t *testing.T) {
	h := newHeldFsyncer()
	s := openWithFsyncer(t, h)
	h.armed.Store(true)

	first := appendAsync(s, "a-1")
	waitFor(t, h.entered, "the first group's fsync")
	retry := appendAsync(s, "a-1") // the same events again: an idempotent retry
	second := appendAsync(s, "a-2")
	// Both reach the committer and are applied behind the held fsync; give
	// them the time to get there, then check that nothing is visible.
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) {
		requireNotDone(t, first, "the first append")
		requireNotDone(t, retry, "the retry")
		requireNotDone(t, second, "the second append")
		time.Sleep(5 * time.Millisecond)
	}
	if head, _ := s.Head(context.Background()); head != eventstore.Beginning {
		t.Fatalf("head %v before any fsync finished, want the beginning", head)
	}
	if _, err := s.ReadStream(context.Background(), "a-1", eventstore.Any, 0); !errors.Is(err, eventstore.ErrStreamNotFound) {
		t.Fatalf("read before the fsync: %v, want ErrStreamNotFound", err)
	}

	h.armed.Store(false)
	h.release <- struct{}{}
	for name, done := range map[string]<-chan error{"first": first, "retry": retry, "second": second} {
		if err := <-done; err != nil {
			t.Fatalf("%s append: %v", name, err)
		}
	}
	if head, _ := s.Head(context.Background()); head.Commit != 2 {
		t.Fatalf("head %v after both appends, want position 2", head)
	}
}

// A failed fsync fails its group and every group applied behind it, and the
// store refuses appends from then on (fsyncgate: the kernel may have dropped
// the unsynced pages, so nothing written since the last good fsync is known
// to be on disk).
func TestFailedFsyncFailsItsGroupAndTheGroupsBehindIt(t *testing.T) {
	h := newHeldFsyncer()
	s := openWithFsyncer(t, h)
	if _, err := s.Append(context.Background(), "ok", eventstore.NoStream, event("ok", 0)); err != nil {
		t.Fatal(err)
	}
	eio := error(syscall.EIO)
	h.fail.Store(&eio)
	h.armed.Store(true)

	first := appendAsync(s, "f-1")
	waitFor(t, h.entered, "the first group's fsync")
	second := appendAsync(s, "f-2")
	time.Sleep(50 * time.Millisecond) // let the second group reach pebble behind the first
	for range 8 {
		h.release <- struct{}{} // pebble may retry the sync or sync again for the second group
	}
	for name, done := range map[string]<-chan error{"first": first, "second": second} {
		if err := <-done; err == nil {
			t.Fatalf("%s append acknowledged after a failed fsync", name)
		}
	}
	_, err := s.Append(context.Background(), "later", eventstore.NoStream, event("later", 0))
	if err == nil || !errors.Is(err, syscall.EIO) {
		t.Fatalf("append after a failed fsync: %v, want the store's EIO failure", err)
	}
	if head, _ := s.Head(context.Background()); head.Commit != 1 {
		t.Fatalf("head %v, want 1: only the append before the failure is durable", head)
	}
	for _, stream := range []string{"f-1", "f-2"} {
		if _, err := s.ReadStream(context.Background(), stream, eventstore.Any, 0); !errors.Is(err, eventstore.ErrStreamNotFound) {
			t.Fatalf("read %s: %v, want ErrStreamNotFound", stream, fmt.Sprint(err))
		}
	}
}

func openHeld(t *testing.T, fsyncer embedded.Fsyncer, fsyncTime time.Duration) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(t.TempDir(), embedded.WithFsyncTime(embedded.WithFsyncer(embedded.Options{}, fsyncer), fsyncTime))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func waitInFlight(t *testing.T, s *embedded.Store, n int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); s.InFlight() != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d appends in flight, want %d", s.InFlight(), n)
		}
	}
}

func requireAnswered(t *testing.T, name string, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s not answered", name)
	}
}

// Four appenders, one append at a time each: while the first one's fsync
// runs the other three arrive, and they wait, after it, for the first
// appender to come back, so that one fsync carries all four.
func TestGroupWaitsForTheAppendersSeenInFlight(t *testing.T) {
	h := newHeldFsyncer()
	s := openHeld(t, h, time.Hour) // no hold runs out in this test
	h.armed.Store(true)
	first := appendAsync(s, "w-0")
	waitFor(t, h.entered, "the first append's fsync")
	others := []<-chan error{appendAsync(s, "w-1"), appendAsync(s, "w-2"), appendAsync(s, "w-3")}
	waitInFlight(t, s, 4)

	h.armed.Store(false)
	walFsyncs := s.WALFsyncs()
	h.release <- struct{}{}
	requireAnswered(t, "the first append", first)
	deadline := time.Now().Add(100 * time.Millisecond)
	for time.Now().Before(deadline) {
		for i, done := range others {
			requireNotDone(t, done, fmt.Sprintf("append %d", i+1))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := s.WALFsyncs() - walFsyncs; got != 0 {
		t.Fatalf("%d fsyncs before the first appender came back, want none", got)
	}
	others = append(others, appendAsync(s, "w-4")) // the first appender's next append
	for i, done := range others {
		requireAnswered(t, fmt.Sprintf("append %d", i+1), done)
	}
	if got := s.WALFsyncs() - walFsyncs; got != 1 {
		t.Fatalf("the four appends took %d fsyncs, want 1", got)
	}
}

// An appender expected back that does not come back holds the others up
// for one fsync's time, not for ever.
func TestGroupHoldRunsOut(t *testing.T) {
	h := newHeldFsyncer()
	s := openHeld(t, h, 5*time.Millisecond)
	h.armed.Store(true)
	first := appendAsync(s, "r-0")
	waitFor(t, h.entered, "the first append's fsync")
	others := []<-chan error{appendAsync(s, "r-1"), appendAsync(s, "r-2")}
	waitInFlight(t, s, 3)
	h.armed.Store(false)
	walFsyncs := s.WALFsyncs()
	h.release <- struct{}{}
	requireAnswered(t, "the first append", first)
	for i, done := range others {
		requireAnswered(t, fmt.Sprintf("append %d", i+1), done)
	}
	if got := s.WALFsyncs() - walFsyncs; got != 1 {
		t.Fatalf("the two appends took %d fsyncs, want 1", got)
	}
}

// A lone appender's appends go to their fsync at once: with an fsync time
// of an hour, any hold would outlast the test.
func TestLoneAppenderIsNotHeld(t *testing.T) {
	s := openHeld(t, newHeldFsyncer(), time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 20 {
		stream := fmt.Sprintf("lone-%d", i)
		if _, err := s.Append(ctx, stream, eventstore.NoStream, event(stream, 0)); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	if got := s.WALFsyncs(); got < 20 {
		t.Fatalf("20 appends one after another took %d fsyncs of the WAL, want one each", got)
	}
}
