package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"tvsm/eventstore"
)

// creating runs ExecuteReserving of a counter named like its owner.
func creating(e *env, x *Executor, name, owner string, m RequestMeta) (Result[counter], bool, error) {
	return ExecuteReserving(e.ctx, x, name, owner, counterDecider, any(create{Name: owner}), m)
}

func (e *env) head() uint64 {
	e.t.Helper()
	h, err := e.store.Head(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return h.Commit
}

func TestExecuteReservingOneAtomicAppend(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.multi()
	x := e.executor(nil, Options{})
	name := LegacyLoginStream(1, "ann")
	_, appendsBefore := e.stats()

	res, handled, err := creating(e, x, name, "counter-1", meta("r1"))
	if !handled || err != nil {
		t.Fatalf("free name: handled %v, err %v; want handled, nil", handled, err)
	}
	if !res.State.Exists || res.State.Name != "counter-1" || len(res.Events) != 1 {
		t.Fatalf("result %+v, want the created counter and its event", res)
	}
	if _, appends := e.stats(); appends-appendsBefore != 1 {
		t.Fatalf("%d appends, want one (reservation and owner together)", appends-appendsBefore)
	}
	taken, created := e.read(name), e.read("counter-1")
	if len(taken) != 1 || taken[0].Type != ReservationTakenType || len(created) != 1 {
		t.Fatalf("streams after create: %d reservation events, %d owner events; want 1 and 1", len(taken), len(created))
	}
	if !bytes.Equal(taken[0].Metadata, created[0].Metadata) || !bytes.Contains(created[0].Metadata, []byte(`"request_id":"r1"`)) {
		t.Fatalf("metadata: reservation %s, owner %s; want the same, of request r1", taken[0].Metadata, created[0].Metadata)
	}
	if taken[0].Position.Commit+1 != created[0].Position.Commit || res.Position != created[0].Position {
		t.Fatalf("positions: reservation %v, owner %v, result %v; want consecutive, result at the owner's", taken[0].Position, created[0].Position, res.Position)
	}
	if h, err := x.Holder(e.ctx, name); err != nil || h != "counter-1" {
		t.Fatalf("holder %q (%v), want counter-1", h, err)
	}
	// The cache knows the owner: its next command decides on it.
	if _, err := Execute(e.ctx, x, "counter-1", counterDecider, any(add{N: 2}), meta("r2")); err != nil {
		t.Fatal(err)
	}
}

func TestExecuteReservingTwiceForOneNameAppendsOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.multi()
	x := e.executor(nil, Options{})
	name := LegacyLoginStream(1, "dan")
	if _, handled, err := creating(e, x, name, "counter-1", meta("r1")); !handled || err != nil {
		t.Fatalf("first create: handled %v, err %v", handled, err)
	}
	// The name taken by the first create is not cached: the second create
	// takes it for free, and the store's expectation refuses that.
	declined(t, e, x, name, "counter-2")
}

// declined checks that a create of name for owner, while another owner
// holds it, is not handled and appends nothing, and that Reserve then
// finds the name taken.
func declined(t *testing.T, e *env, x *Executor, name, owner string) {
	t.Helper()
	head := e.head()
	if _, handled, err := creating(e, x, name, owner, meta("create-"+owner)); handled || err != nil {
		t.Fatalf("create of a taken name: handled %v, err %v; want declined", handled, err)
	}
	if e.head() != head || len(e.read(owner)) != 0 {
		t.Fatal("the declined create appended something")
	}
	if err := x.Reserve(e.ctx, name, owner, meta("reserve-"+owner), nil); !errors.Is(err, ErrTaken) {
		t.Fatalf("Reserve after the decline: %v, want ErrTaken", err)
	}
}

func TestExecuteReservingLeavesTakenNamesToReserve(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	name := LegacyLoginStream(1, "bob")
	// Another node holds the name; this executor has never seen it.
	if err := e.executor(nil, Options{}).Reserve(e.ctx, name, "counter-1", meta("other"), nil); err != nil {
		t.Fatal(err)
	}
	x := e.executor(nil, Options{})
	declined(t, e, x, name, "counter-2")
	// Now the executor has read the name's stream: it declines without trying.
	head := e.head()
	if _, handled, _ := creating(e, x, name, "counter-3", meta("r3")); handled || e.head() != head {
		t.Fatalf("handled %v, head moved %v: want declined with nothing appended", handled, e.head() != head)
	}
}

func TestExecuteReservingAfterRelease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.multi()
	x := e.executor(nil, Options{})
	name := LegacyLoginStream(1, "cy")
	if _, handled, err := creating(e, x, name, "counter-1", meta("r1")); !handled || err != nil {
		t.Fatal(handled, err)
	}
	if err := x.Release(e.ctx, name, "counter-1", meta("r2")); err != nil {
		t.Fatal(err)
	}
	if _, handled, err := creating(e, x, name, "counter-2", meta("r3")); !handled || err != nil {
		t.Fatalf("released name: handled %v, err %v; want taken in one append", handled, err)
	}
	if h, _ := x.Holder(e.ctx, name); h != "counter-2" {
		t.Fatalf("holder %q, want counter-2", h)
	}
}

// This process last saw the name free (it released it); another node has
// taken it since. The stale state fails the append's expectation: nothing
// is appended and Reserve, reading the stream, finds the holder.
func TestExecuteReservingWithAStaleFreeName(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.multi()
	x, other := e.executor(nil, Options{}), e.executor(nil, Options{})
	name := LegacyLoginStream(1, "hal")
	if _, handled, err := creating(e, x, name, "counter-1", meta("r1")); !handled || err != nil {
		t.Fatal(handled, err)
	}
	if err := x.Release(e.ctx, name, "counter-1", meta("r2")); err != nil {
		t.Fatal(err)
	}
	if err := other.Reserve(e.ctx, name, "counter-2", meta("r3"), nil); err != nil {
		t.Fatal(err)
	}
	declined(t, e, x, name, "counter-3")
}

func TestExecuteReservingDeclines(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	name := LegacyLoginStream(1, "dee")
	head := e.head()
	keyed := meta("r1")
	keyed.IdempotencyKey = "k1"
	if _, handled, err := creating(e, e.executor(nil, Options{}), name, "counter-1", keyed); handled || err != nil {
		t.Fatalf("keyed command: handled %v, err %v; want not handled", handled, err)
	}
	plain := &faultyStore{Store: e.store}
	if _, handled, err := creating(e, e.executor(plain, Options{}), name, "counter-1", meta("r2")); handled || err != nil {
		t.Fatalf("store without multi-stream appends: handled %v, err %v; want not handled", handled, err)
	}
	if e.head() != head {
		t.Fatal("a declined create appended something")
	}
}

func TestExecuteReservingDecisionErrorAppendsNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.multi()
	x := e.executor(nil, Options{})
	head := e.head()
	_, handled, err := ExecuteReserving(e.ctx, x, LegacyLoginStream(1, "eve"), "counter-1", counterDecider, any(add{N: 1}), meta("r1"))
	if !handled || !errors.Is(err, errNotFound) {
		t.Fatalf("handled %v, err %v; want handled with the decision error", handled, err)
	}
	if e.head() != head {
		t.Fatal("a refused command appended something")
	}
}

// Many goroutines on three nodes create owners of the same name at once,
// each falling back to Reserve when the atomic path declines: exactly one
// owner exists and holds the name.
func TestExecuteReservingConcurrentExactlyOneWins(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.multi()
	name := LegacyLoginStream(1, "fay")
	nodes := []*Executor{e.executor(nil, Options{}), e.executor(nil, Options{}), e.executor(nil, Options{})}
	winners := raceForName(t, nodes, 16, "counter-", func(x *Executor, owner string) error {
		_, handled, err := creating(e, x, name, owner, meta("r-"+owner))
		if !handled {
			if err = x.Reserve(e.ctx, name, owner, meta("r-"+owner), nil); err == nil {
				_, err = Execute(e.ctx, x, owner, counterDecider, any(create{Name: owner}), meta("r-"+owner))
			}
		}
		return err
	})
	if len(winners) != 1 {
		t.Fatalf("winners %v, want exactly one", winners)
	}
	if h, _ := nodes[0].Holder(e.ctx, name); h != winners[0] {
		t.Fatalf("holder %q, winner %q", h, winners[0])
	}
	for n := range nodes {
		for i := range 16 {
			owner := fmt.Sprintf("counter-%d%02d", n+1, i)
			if got := len(e.read(owner)); (owner == winners[0]) != (got == 1) {
				t.Errorf("%s has %d events; only the winner's stream may exist", owner, got)
			}
		}
	}
	if got := len(e.read(name)); got != 1 {
		t.Fatalf("%d reservation events, want 1", got)
	}
}

var _ eventstore.MultiAppender = (*faultyMulti)(nil)

// faultyMulti is the real store with AppendMulti whose first call's
// acknowledgement is lost after the append was stored.
type faultyMulti struct {
	*faultyStore
	multi eventstore.MultiAppender
	mu    sync.Mutex
	calls int
}

func (f *faultyMulti) AppendMulti(ctx context.Context, parts ...eventstore.StreamAppend) ([]eventstore.AppendResult, error) {
	res, err := f.multi.AppendMulti(ctx, parts...)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if err == nil && f.calls == 1 {
		return nil, errors.New("connection reset")
	}
	return res, err
}

func TestExecuteReservingResendsAfterUnknownOutcome(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	store := &faultyMulti{faultyStore: &faultyStore{Store: e.store}, multi: e.multi()}
	x := e.executor(store, Options{})
	name := LegacyLoginStream(1, "gus")
	res, handled, err := creating(e, x, name, "counter-1", meta("r1"))
	if !handled || err != nil {
		t.Fatalf("handled %v, err %v; want the resend to find the stored append", handled, err)
	}
	if store.calls != 2 || len(e.read(name)) != 1 || len(e.read("counter-1")) != 1 {
		t.Fatalf("%d calls, %d reservation and %d owner events; want 2 calls storing once", store.calls, len(e.read(name)), len(e.read("counter-1")))
	}
	if res.Position != e.read("counter-1")[0].Position {
		t.Fatalf("result position %v, want the stored event's", res.Position)
	}
}
