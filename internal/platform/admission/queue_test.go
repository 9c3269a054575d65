package admission_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"tvsm/internal/platform/admission"
)

// queueUp starts a waiter for key in lane and waits until it is queued;
// the waiter sends its name on granted once it has a slot, then holds it
// until its release channel is closed.
type queuedWaiter struct {
	name    string
	release chan struct{}
	err     chan error
}

func queueUp(t *testing.T, q *admission.Queue, ctx context.Context, l admission.Lane, key, name string, granted chan<- string) *queuedWaiter {
	t.Helper()
	_, _, before := q.Stats()
	w := &queuedWaiter{name: name, release: make(chan struct{}), err: make(chan error, 1)}
	go func() {
		rel, err := q.Acquire(ctx, l, key)
		w.err <- err
		if err != nil {
			return
		}
		granted <- name
		<-w.release
		rel()
	}()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, _, n := q.Stats(); n > before {
			return w
		}
		select {
		case err := <-w.err:
			t.Fatalf("%s: Acquire returned %v before it was queued", name, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: never queued", name)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLanesAndKeysOrderTheWaiters: given one slot held, when waiters of
// every lane and several keys queue up, then the most trusted lane is
// served first and, within a lane, the keys take turns.
func TestLanesAndKeysOrderTheWaiters(t *testing.T) {
	q := admission.New(admission.Options{Slots: 1, MaxWait: time.Minute})
	ctx := context.Background()
	hold, err := q.Acquire(ctx, admission.Suspect, "first")
	if err != nil {
		t.Fatal(err)
	}
	granted := make(chan string, 16)
	var ws []*queuedWaiter
	for _, w := range []struct {
		lane      admission.Lane
		key, name string
	}{
		{admission.Suspect, "a", "a1"},
		{admission.Suspect, "a", "a2"},
		{admission.Suspect, "a", "a3"},
		{admission.Suspect, "b", "b1"},
		{admission.Clean, "c", "c1"},
		{admission.Clean, "c", "c2"},
		{admission.Clean, "d", "d1"},
		{admission.Trusted, "e", "e1"},
	} {
		ws = append(ws, queueUp(t, q, ctx, w.lane, w.key, w.name, granted))
	}
	byName := map[string]*queuedWaiter{}
	for _, w := range ws {
		byName[w.name] = w
	}
	hold()
	want := []string{"e1", "c1", "d1", "c2", "a1", "b1", "a2", "a3"}
	for i, name := range want {
		got := <-granted
		if got != name {
			t.Fatalf("grant %d went to %s, want %s (order %v)", i, got, name, want)
		}
		close(byName[got].release)
	}
	if g, r, n := q.Stats(); g != 9 || r != 0 || n != 0 {
		t.Fatalf("stats: %d granted, %d refused, %d waiting; want 9, 0, 0", g, r, n)
	}
}

// TestAWaitPastMaxWaitIsRefused: given the only slot held, when a waiter
// gets none within MaxWait, then it is refused with ErrOverloaded and
// leaves the queue.
func TestAWaitPastMaxWaitIsRefused(t *testing.T) {
	q := admission.New(admission.Options{Slots: 1, MaxWait: 20 * time.Millisecond})
	hold, err := q.Acquire(context.Background(), admission.Clean, "x")
	if err != nil {
		t.Fatal(err)
	}
	defer hold()
	if _, err := q.Acquire(context.Background(), admission.Trusted, "y"); !errors.Is(err, admission.ErrOverloaded) {
		t.Fatalf("Acquire: %v, want ErrOverloaded", err)
	}
	if _, r, n := q.Stats(); r != 1 || n != 0 {
		t.Fatalf("%d refused, %d waiting; want 1, 0", r, n)
	}
}

// TestAWaiterWhoseContextEndsLeaves: given the only slot held, when a
// waiter's context ends, then it gets the context's error and the queue is
// empty again.
func TestAWaiterWhoseContextEndsLeaves(t *testing.T) {
	q := admission.New(admission.Options{Slots: 1, MaxWait: time.Minute})
	hold, err := q.Acquire(context.Background(), admission.Clean, "x")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	granted := make(chan string, 1)
	w := queueUp(t, q, ctx, admission.Clean, "y", "y", granted)
	cancel()
	if err := <-w.err; !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire: %v, want context.Canceled", err)
	}
	hold()
	if _, r, n := q.Stats(); r != 0 || n != 0 {
		t.Fatalf("%d refused, %d waiting; want 0, 0", r, n)
	}
	// The slot is free again.
	rel, err := q.Acquire(context.Background(), admission.Suspect, "z")
	if err != nil {
		t.Fatalf("Acquire after the slot came back: %v", err)
	}
	rel()
	rel() // a second release gives back nothing more
	rel2, err := q.Acquire(context.Background(), admission.Suspect, "z")
	if err != nil {
		t.Fatal(err)
	}
	rel2()
}

// TestAFullQueueMakesRoomForTheTrusted: given a full queue of suspect
// waiters, when a trusted waiter comes, then the newest suspect one is
// refused in its place; and when another suspect one comes, it is refused.
func TestAFullQueueMakesRoomForTheTrusted(t *testing.T) {
	q := admission.New(admission.Options{Slots: 1, MaxWait: time.Minute, MaxQueued: 2})
	ctx := context.Background()
	hold, err := q.Acquire(ctx, admission.Clean, "x")
	if err != nil {
		t.Fatal(err)
	}
	granted := make(chan string, 4)
	s1 := queueUp(t, q, ctx, admission.Suspect, "a", "s1", granted)
	s2 := queueUp(t, q, ctx, admission.Suspect, "b", "s2", granted)
	if _, err := q.Acquire(ctx, admission.Suspect, "c"); !errors.Is(err, admission.ErrOverloaded) {
		t.Fatalf("suspect waiter on a full queue: %v, want ErrOverloaded", err)
	}
	trusted := make(chan error, 1)
	go func() {
		rel, err := q.Acquire(ctx, admission.Trusted, "t")
		if err == nil {
			granted <- "t"
			rel()
		}
		trusted <- err
	}()
	if err := <-s2.err; !errors.Is(err, admission.ErrOverloaded) {
		t.Fatalf("newest suspect waiter: %v, want ErrOverloaded (evicted)", err)
	}
	hold()
	if got := <-granted; got != "t" {
		t.Fatalf("first grant went to %s, want the trusted waiter", got)
	}
	if err := <-trusted; err != nil {
		t.Fatal(err)
	}
	if got := <-granted; got != "s1" {
		t.Fatalf("second grant went to %s, want s1", got)
	}
	close(s1.release)
}

// TestAnEstimatePastMaxWaitRefusesAtOnce: given slots held for a known
// time and waiters queued, when a newcomer would wait longer than MaxWait
// by that estimate, then it is refused at once, while a more trusted one,
// with nobody ahead, still queues.
func TestAnEstimatePastMaxWaitRefusesAtOnce(t *testing.T) {
	var (
		mu  sync.Mutex
		now = time.Unix(0, 0)
	)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	q := admission.New(admission.Options{Slots: 1, MaxWait: time.Minute, Clock: clock})
	ctx := context.Background()
	// One hold of 25 s teaches the queue how long a slot is held.
	rel, err := q.Acquire(ctx, admission.Clean, "x")
	if err != nil {
		t.Fatal(err)
	}
	advance(25 * time.Second)
	rel()
	hold, err := q.Acquire(ctx, admission.Clean, "x")
	if err != nil {
		t.Fatal(err)
	}
	granted := make(chan string, 4)
	s1 := queueUp(t, q, ctx, admission.Suspect, "a", "s1", granted) // estimate 25 s
	// The next suspect waiter would wait 2 × 25 s = 50 s; the third 75 s.
	s2 := queueUp(t, q, ctx, admission.Suspect, "b", "s2", granted)
	if _, err := q.Acquire(ctx, admission.Suspect, "c"); !errors.Is(err, admission.ErrOverloaded) {
		t.Fatalf("third suspect waiter: %v, want ErrOverloaded at once", err)
	}
	tw := queueUp(t, q, ctx, admission.Trusted, "t", "t", granted)
	hold()
	for _, w := range []*queuedWaiter{tw, s1, s2} {
		if got := <-granted; got != w.name {
			t.Fatalf("grant went to %s, want %s", got, w.name)
		}
		close(w.release)
	}
}

// TestSlotsBoundTheHolders: given many callers of every lane and a few
// keys, each holding its slot a moment, then never more than Slots callers
// other than trusted ones, nor more than Slots+Reserved in all, hold one
// at once; every caller is answered, and the queue ends empty.
func TestSlotsBoundTheHolders(t *testing.T) {
	const slots, reserved, callers = 2, 1, 400
	q := admission.New(admission.Options{Slots: slots, Reserved: reserved, MaxWait: time.Minute, MaxQueued: 64})
	var (
		mu                                sync.Mutex
		holding, others, most, mostOthers int
		granted, refuse                   int
		wg                                sync.WaitGroup
	)
	for i := range callers {
		lane := admission.Lane(i % 3)
		wg.Go(func() {
			rel, err := q.Acquire(context.Background(), lane, string(rune('a'+i%5)))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if !errors.Is(err, admission.ErrOverloaded) {
					t.Errorf("Acquire: %v", err)
				}
				refuse++
				return
			}
			granted++
			holding++
			if lane != admission.Trusted {
				others++
			}
			most, mostOthers = max(most, holding), max(mostOthers, others)
			mu.Unlock()
			time.Sleep(50 * time.Microsecond)
			mu.Lock()
			holding--
			if lane != admission.Trusted {
				others--
			}
			rel()
		})
	}
	wg.Wait()
	if most > slots+reserved || mostOthers > slots || granted+refuse != callers {
		t.Fatalf("at most %d held at once, %d by others than trusted (slots %d, reserved %d); %d granted + %d refused of %d",
			most, mostOthers, slots, reserved, granted, refuse, callers)
	}
	if g, r, n := q.Stats(); int(g) != granted || int(r) != refuse || n != 0 {
		t.Fatalf("stats %d granted, %d refused, %d waiting; counted %d, %d, 0", g, r, n, granted, refuse)
	}
}

// TestReservedSlotsAreForTheTrusted: given every slot held and a reserved
// one free, when callers of each lane come, then a trusted one takes the
// reserved slot at once and the others wait for a slot.
func TestReservedSlotsAreForTheTrusted(t *testing.T) {
	q := admission.New(admission.Options{Slots: 1, Reserved: 1, MaxWait: time.Minute})
	ctx := context.Background()
	hold, err := q.Acquire(ctx, admission.Suspect, "a")
	if err != nil {
		t.Fatal(err)
	}
	granted := make(chan string, 4)
	clean := queueUp(t, q, ctx, admission.Clean, "c", "c", granted)
	relTrusted, err := q.Acquire(ctx, admission.Trusted, "t")
	if err != nil {
		t.Fatalf("trusted caller with the reserved slot free: %v", err)
	}
	// A second trusted caller waits: the reserved slot is taken. It goes
	// first when the trusted one's reserved slot comes back.
	trusted2 := queueUp(t, q, ctx, admission.Trusted, "t2", "t2", granted)
	relTrusted()
	if got := <-granted; got != "t2" {
		t.Fatalf("the reserved slot went to %s, want t2", got)
	}
	hold()
	if got := <-granted; got != "c" {
		t.Fatalf("the slot went to %s, want c", got)
	}
	close(trusted2.release)
	close(clean.release)
}
