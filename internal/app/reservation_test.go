package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"tvsm/domain"
)

func TestReserveAndRelease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.executor(nil, Options{NameKey: []byte("key one")})
	s := x.LoginStream(3, "bob")
	// The login is hashed under the name key: the stream name tells
	// nothing of it, yet every executor with the key names it alike.
	if !strings.HasPrefix(s, "login-3-h") || strings.Contains(s, "bob") || len(s) != len("login-3-h")+32 {
		t.Fatalf("LoginStream = %q", s)
	}
	if again := e.executor(nil, Options{NameKey: []byte("key one")}).LoginStream(3, "bob"); again != s {
		t.Fatalf("same key, another name: %q, %q", s, again)
	}
	if other := e.executor(nil, Options{NameKey: []byte("key two")}).LoginStream(3, "bob"); other == s {
		t.Fatalf("another key gives the same name %q", other)
	}
	if LegacyLoginStream(3, "bob") != "login-3-bob" {
		t.Fatalf("LegacyLoginStream = %q", LegacyLoginStream(3, "bob"))
	}
	if err := x.Reserve(e.ctx, s, "account-1", meta("r1"), nil); err != nil {
		t.Fatal(err)
	}
	if err := x.Reserve(e.ctx, s, "account-1", meta("r2"), nil); err != nil {
		t.Fatalf("reserving again for the holder: %v", err)
	}
	if n := len(e.read(s)); n != 1 {
		t.Fatalf("%d events after a repeated reserve, want 1", n)
	}
	err := x.Reserve(e.ctx, s, "account-2", meta("r3"), nil)
	var taken *TakenError
	if !errors.Is(err, ErrTaken) || !errors.As(err, &taken) || taken.Holder != "account-1" {
		t.Fatalf("other owner: err = %v, want ErrTaken held by account-1", err)
	}
	if err := x.Release(e.ctx, s, "account-2", meta("r4")); err != nil {
		t.Fatalf("release by a non-holder: %v", err)
	}
	if h, _ := x.Holder(e.ctx, s); h != "account-1" {
		t.Fatalf("holder %q after a non-holder's release, want account-1", h)
	}
	if err := x.Release(e.ctx, s, "account-1", meta("r5")); err != nil {
		t.Fatal(err)
	}
	if h, _ := x.Holder(e.ctx, s); h != "" {
		t.Fatalf("holder %q after release, want none", h)
	}
	if err := x.Reserve(e.ctx, s, "account-2", meta("r6"), nil); err != nil {
		t.Fatalf("reserve after release: %v", err)
	}
	if n := len(e.read(s)); n != 3 {
		t.Fatalf("%d events, want taken, released, taken", n)
	}
}

// Many goroutines on three nodes create the same login at once: exactly
// one wins.
func TestReserveConcurrentExactlyOneWins(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := LegacyLoginStream(1, "alice")
	nodes := []*Executor{e.executor(nil, Options{}), e.executor(nil, Options{}), e.executor(nil, Options{})}
	winners := raceForName(t, nodes, 20, "account-", func(x *Executor, owner string) error {
		return x.Reserve(e.ctx, s, owner, meta("r-"+owner), x.StreamExists)
	})
	if len(winners) != 1 {
		t.Fatalf("winners %v, want exactly one", winners)
	}
	if n := len(e.read(s)); n != 1 {
		t.Fatalf("%d events, want 1", n)
	}
	if h, _ := nodes[2].Holder(e.ctx, s); h != winners[0] {
		t.Fatalf("holder %q, want %q", h, winners[0])
	}
}

// A crash between reserving a login and creating the account leaves a
// reservation owned by an account that does not exist: after the grace
// period the next request takes it over.
func TestReserveTakesOverFromDeadOwner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.executor(nil, Options{ReservationGrace: time.Minute})
	s := LegacyLoginStream(1, "carol")
	if err := x.Reserve(e.ctx, s, "account-1", meta("r1"), nil); err != nil {
		t.Fatal(err)
	}
	// account-1 never gets created. Within the grace period it may still be.
	if err := x.Reserve(e.ctx, s, "account-2", meta("r2"), x.StreamExists); !errors.Is(err, ErrTaken) {
		t.Fatalf("within grace: err = %v, want ErrTaken", err)
	}
	e.clock.Advance(time.Minute)
	if err := x.Reserve(e.ctx, s, "account-2", meta("r3"), x.StreamExists); err != nil {
		t.Fatalf("after grace: %v", err)
	}
	recs := e.read(s)
	last, err := e.reg.Decode(recs[len(recs)-1].Type, recs[len(recs)-1].Data)
	if err != nil {
		t.Fatal(err)
	}
	if got := last.(ReservationTaken); got.Owner != "account-2" || got.Evicted != "account-1" {
		t.Fatalf("takeover event %+v", got)
	}

	// A live holder keeps its name however old the reservation.
	e.appendDirect("account-2", counterCreated{Name: "carol"})
	e.clock.Advance(time.Hour)
	if err := x.Reserve(e.ctx, s, "account-3", meta("r4"), x.StreamExists); !errors.Is(err, ErrTaken) {
		t.Fatalf("live holder: err = %v, want ErrTaken", err)
	}
	// isAlive's failure is reported, not taken for death.
	boom := errors.New("boom")
	err = x.Reserve(e.ctx, s, "account-3", meta("r5"), func(context.Context, string) (bool, error) { return false, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("isAlive failure: err = %v", err)
	}
}

func TestReserveMetadata(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.executor(nil, Options{})
	s := LegacyLoginStream(2, "dave")
	if err := x.Reserve(e.ctx, s, "account-1", meta("req-7"), nil); err != nil {
		t.Fatal(err)
	}
	m, err := domain.DecodeMetadata(e.read(s)[0].Metadata)
	if err != nil || m.RequestID != "req-7" || m.Actor != domain.AdminActor("alice") {
		t.Fatalf("metadata %+v, %v", m, err)
	}
}

// raceForName runs per goroutines on each executor at once, each calling
// take for an owner of its own (prefix, node and index), and returns the
// owners for which take succeeded; an error other than ErrTaken fails t.
func raceForName(t *testing.T, nodes []*Executor, per int, prefix string, take func(x *Executor, owner string) error) []string {
	t.Helper()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []string
	)
	for n, x := range nodes {
		for i := range per {
			wg.Go(func() {
				owner := fmt.Sprintf("%s%d%02d", prefix, n+1, i)
				switch err := take(x, owner); {
				case err == nil:
					mu.Lock()
					winners = append(winners, owner)
					mu.Unlock()
				case !errors.Is(err, ErrTaken):
					t.Errorf("%s: %v", owner, err)
				}
			})
		}
	}
	wg.Wait()
	return winners
}
