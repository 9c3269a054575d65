package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
)

// signup is the work of a "create with a unique name" request: pin an id,
// reserve the name for it, create the counter, then add to it. fail, when
// set, is called between the steps and may abort the attempt.
type signup struct {
	x     *Executor
	name  string
	calls atomic.Int32
	fail  func(step string) error
}

func (s *signup) do(ctx context.Context) (int, []byte, error) {
	s.calls.Add(1)
	m := meta("signup-" + s.name)
	step := func(name string) error {
		if s.fail != nil {
			return s.fail(name)
		}
		return nil
	}
	id, err := s.x.NewID(ctx, "counter")
	if err != nil {
		return 0, nil, err
	}
	stream := fmt.Sprintf("counter-%d", id)
	if err := s.x.Reserve(ctx, LegacyLoginStream(1, s.name), stream, m, s.x.StreamExists); err != nil {
		return 0, nil, err
	}
	if _, err := Execute(ctx, s.x, stream, counterDecider, any(create{Name: s.name}), m); err != nil {
		return 0, nil, err
	}
	if err := step("created"); err != nil {
		return 0, nil, err
	}
	res, err := Execute(ctx, s.x, stream, counterDecider, any(add{N: 5}), m)
	if err != nil {
		return 0, nil, err
	}
	return 201, fmt.Appendf(nil, `{"id":%d,"total":%d}`, id, res.State.Total), nil
}

func request(key, body string) IdempotentRequest {
	return IdempotentRequest{Key: key, Scope: "provider:1 POST /accounts", Body: []byte(body), Meta: meta("req-" + key)}
}

// counts returns how many events the signup's streams hold.
func (e *env) signupEvents(name string, id int) (counterEvents, loginEvents, idBlocks int) {
	return len(e.read(fmt.Sprintf("counter-%d", id))), len(e.read(LegacyLoginStream(1, name))), len(e.read(IDStream("counter")))
}

func TestIdempotentSameKeyTwiceAppendsOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.executor(nil, Options{})
	s := &signup{x: x, name: "ann"}
	st1, body1, err := x.Idempotent(e.ctx, request("k1", `{"login":"ann"}`), s.do)
	if err != nil {
		t.Fatal(err)
	}
	// Another node answers the retry.
	st2, body2, err := e.executor(nil, Options{}).Idempotent(e.ctx, request("k1", `{"login":"ann"}`), s.do)
	if err != nil {
		t.Fatal(err)
	}
	if st1 != 201 || st2 != st1 || string(body2) != string(body1) || string(body1) != `{"id":1,"total":5}` {
		t.Fatalf("responses %d %s and %d %s", st1, body1, st2, body2)
	}
	if n := s.calls.Load(); n != 1 {
		t.Fatalf("work ran %d times, want 1", n)
	}
	if c, l, b := e.signupEvents("ann", 1); c != 2 || l != 1 || b != 1 {
		t.Fatalf("events: counter %d, login %d, id blocks %d; want 2, 1, 1", c, l, b)
	}
	if e.read("counter-2") != nil {
		t.Fatal("a second counter was created")
	}
}

func TestIdempotentKeyWithAnotherBody(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.executor(nil, Options{})
	s := &signup{x: x, name: "ann"}
	if _, _, err := x.Idempotent(e.ctx, request("k1", `{"login":"ann"}`), s.do); err != nil {
		t.Fatal(err)
	}
	_, _, err := x.Idempotent(e.ctx, request("k1", `{"login":"bob"}`), s.do)
	if !errors.Is(err, ErrIdempotencyMismatch) {
		t.Fatalf("err = %v, want ErrIdempotencyMismatch", err)
	}
	// The same key in another scope is another key.
	other := request("k1", `{"login":"bob"}`)
	other.Scope = "provider:2 POST /accounts"
	if _, _, err := x.Idempotent(e.ctx, other, (&signup{x: x, name: "bob"}).do); err != nil {
		t.Fatalf("other scope: %v", err)
	}
}

func TestIdempotentConcurrentRetryIsInProgress(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.executor(nil, Options{})
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, _, err := x.Idempotent(e.ctx, request("k1", "b"), func(context.Context) (int, []byte, error) {
			close(started)
			<-release
			return 200, []byte("first"), nil
		})
		done <- err
	}()
	<-started
	_, _, err := x.Idempotent(e.ctx, request("k1", "b"), func(context.Context) (int, []byte, error) {
		return 200, []byte("second"), nil
	})
	if !errors.Is(err, ErrIdempotencyInProgress) {
		t.Fatalf("err = %v, want ErrIdempotencyInProgress", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st, body, err := x.Idempotent(e.ctx, request("k1", "b"), nil)
	if err != nil || st != 200 || string(body) != "first" {
		t.Fatalf("after completion: %d %q %v", st, body, err)
	}
}

// The work appends, then fails before its response exists: the retry redoes
// it with the same pinned id, finds what was appended, and appends only what
// is missing.
func TestIdempotentRetryAfterFailedAttempt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.executor(nil, Options{})
	s := &signup{x: x, name: "ann"}
	boom := errors.New("boom")
	s.fail = func(step string) error {
		if step == "created" && s.calls.Load() == 1 {
			return boom
		}
		return nil
	}
	if _, _, err := x.Idempotent(e.ctx, request("k1", "b"), s.do); !errors.Is(err, boom) {
		t.Fatalf("first attempt: %v, want boom", err)
	}
	if c, l, b := e.signupEvents("ann", 1); c != 1 || l != 1 || b != 1 {
		t.Fatalf("after the failure: counter %d, login %d, blocks %d; want 1, 1, 1", c, l, b)
	}
	// The failure was recorded, so the retry need not wait for the lease.
	st, body, err := x.Idempotent(e.ctx, request("k1", "b"), s.do)
	if err != nil || st != 201 || string(body) != `{"id":1,"total":5}` {
		t.Fatalf("retry: %d %s %v", st, body, err)
	}
	if c, l, b := e.signupEvents("ann", 1); c != 2 || l != 1 || b != 1 {
		t.Fatalf("after the retry: counter %d, login %d, blocks %d; want 2, 1, 1", c, l, b)
	}
}

// Crash simulation: the work completes but the process dies before the
// response is recorded (here: recording fails, and the node is gone). The
// client's retry reaches another node; once the lease has expired (the
// default lease: the key is in doubt that long at most) that node redoes
// the work with the same ids and appends nothing new.
func TestIdempotentRetryAfterCrashBeforeRecording(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fs := &faultyStore{Store: e.store}
	crashed := errors.New("process died")
	fs.before = func(_ string, events []eventstore.EventData) error {
		switch events[0].Type {
		case IdempotencyRecordedType, IdempotencyFailedType:
			return crashed
		}
		return nil
	}
	node1 := e.executor(fs, Options{})
	s := &signup{x: node1, name: "ann"}
	st, body, err := node1.Idempotent(e.ctx, request("k1", "b"), s.do)
	if err != nil || st != 201 {
		t.Fatalf("first attempt: %d %s %v", st, body, err)
	}
	head := func() eventstore.Position {
		p, _ := e.store.Head(e.ctx)
		return p
	}
	before := head()

	node2 := e.executor(nil, Options{})
	s2 := &signup{x: node2, name: "ann"}
	e.clock.Advance(DefaultIdempotencyLease - time.Millisecond)
	var inProgress *InProgressError
	if _, _, err := node2.Idempotent(e.ctx, request("k1", "b"), s2.do); !errors.As(err, &inProgress) || inProgress.Wait != time.Millisecond {
		t.Fatalf("within the lease: %v, want ErrIdempotencyInProgress for 1ms more", err)
	}
	e.clock.Advance(time.Millisecond)
	st2, body2, err := node2.Idempotent(e.ctx, request("k1", "b"), s2.do)
	if err != nil || st2 != st || string(body2) != string(body) {
		t.Fatalf("retry: %d %s %v, want %d %s", st2, body2, err, st, body)
	}
	if s2.calls.Load() != 1 {
		t.Fatal("the retry did not redo the work")
	}
	if c, l, b := e.signupEvents("ann", 1); c != 2 || l != 1 || b != 1 {
		t.Fatalf("counter %d, login %d, blocks %d; want 2, 1, 1", c, l, b)
	}
	// Only the idempotency record grew: the takeover and the response.
	if got := e.eventsAfter(before); len(got) != 2 || got[0].Type != IdempotencyStartedType || got[1].Type != IdempotencyRecordedType {
		t.Fatalf("the retry appended %d events, want 2 (IdempotencyStarted, IdempotencyRecorded)", len(got))
	}
	// From now on the recorded response is replayed without work.
	if _, _, err := node2.Idempotent(e.ctx, request("k1", "b"), s2.do); err != nil || s2.calls.Load() != 1 {
		t.Fatalf("third call: %v, work ran %d times", err, s2.calls.Load())
	}
}

// An attempt whose work outlasts its lease renews it: a retry meanwhile is
// told the request is in progress, never let in to run it again.
func TestIdempotentLeaseRenewedWhileWorking(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A renewal has a third of the lease to land. With 1.5 s leases, a
	// renewal on the EventStoreDB double under -race, with the other core
	// busy, once took longer than its 500 ms, the lease ran out and the
	// retry ran the work: the production default gives it a second.
	const lease = DefaultIdempotencyLease
	x := e.executor(nil, Options{Clock: time.Now, IdempotencyLease: lease})
	other := e.executor(nil, Options{Clock: time.Now, IdempotencyLease: lease})
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, _, err := x.Idempotent(e.ctx, request("k1", "b"), func(ctx context.Context) (int, []byte, error) {
			close(started)
			select {
			case <-release:
				return 200, []byte("slow"), nil
			case <-ctx.Done():
				return 0, nil, ctx.Err()
			}
		})
		done <- err
	}()
	<-started
	twice := func(context.Context) (int, []byte, error) {
		t.Error("a retry ran the work while the first attempt held the key")
		return 0, nil, errors.New("ran twice")
	}
	for range 3 { // three leases' worth of work
		time.Sleep(lease)
		if _, _, err := other.Idempotent(e.ctx, request("k1", "b"), twice); !errors.Is(err, ErrIdempotencyInProgress) {
			t.Fatalf("retry while the work runs: %v, want ErrIdempotencyInProgress", err)
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the slow attempt: %v", err)
	}
	renewals := 0
	for _, ev := range e.read(IdempotencyStream("provider:1 POST /accounts", "k1")) {
		if ev.Type == IdempotencyLeaseExtendedType {
			renewals++
		}
	}
	if renewals < 3 {
		t.Fatalf("%d renewals in three leases' time, want at least 3", renewals)
	}
	if st, body, err := other.Idempotent(e.ctx, request("k1", "b"), twice); err != nil || st != 200 || string(body) != "slow" {
		t.Fatalf("after completion: %d %q %v", st, body, err)
	}
}

// An attempt that cannot renew its lease (the store does not take the
// renewal) has its work stopped before the lease runs out, and the client
// is told to retry; the retry takes over at once.
func TestIdempotentWorkStopsWithItsLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fs := &faultyStore{Store: e.store}
	fs.before = func(_ string, events []eventstore.EventData) error {
		if events[0].Type == IdempotencyLeaseExtendedType {
			return errors.New("store unreachable")
		}
		return nil
	}
	const lease = 900 * time.Millisecond
	x := e.executor(fs, Options{Clock: time.Now, IdempotencyLease: lease})
	var began, stopped time.Time
	_, _, err := x.Idempotent(e.ctx, request("k1", "b"), func(ctx context.Context) (int, []byte, error) {
		began = time.Now()
		<-ctx.Done()
		stopped = time.Now()
		return 0, nil, ctx.Err()
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("attempt without renewals: %v, want a timeout", err)
	}
	// The work stops a third of a lease before the lease ends.
	if took := stopped.Sub(began); took < lease/3 || took >= lease {
		t.Fatalf("the work ran %v with a lease of %v, want it stopped before the lease ends", took, lease)
	}
	st, body, err := e.executor(nil, Options{Clock: time.Now}).Idempotent(e.ctx, request("k1", "b"), func(context.Context) (int, []byte, error) {
		return 200, []byte("retried"), nil
	})
	if err != nil || st != 200 || string(body) != "retried" {
		t.Fatalf("retry: %d %q %v", st, body, err)
	}
}

// Work that panics stops renewing its lease: a retry takes over once the
// lease has run out.
func TestIdempotentPanickingWorkLetsItsLeaseRunOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const lease = 300 * time.Millisecond
	x := e.executor(nil, Options{Clock: time.Now, IdempotencyLease: lease})
	func() {
		defer func() { _ = recover() }()
		_, _, _ = x.Idempotent(e.ctx, request("k1", "b"), func(context.Context) (int, []byte, error) { panic("boom") })
	}()
	time.Sleep(2 * lease)
	st, body, err := x.Idempotent(e.ctx, request("k1", "b"), func(context.Context) (int, []byte, error) { return 200, []byte("again"), nil })
	if err != nil || st != 200 || string(body) != "again" {
		t.Fatalf("retry two leases after a panic: %d %q %v", st, body, err)
	}
}

func TestIdempotentKeyExpires(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.executor(nil, Options{IdempotencyTTL: time.Hour})
	n := 0
	do := func(ctx context.Context) (int, []byte, error) {
		n++
		id, err := x.NewID(ctx, "counter")
		return 200, fmt.Appendf(nil, "%d", id), err
	}
	_, b1, _ := x.Idempotent(e.ctx, request("k1", "b"), do)
	e.clock.Advance(time.Hour)
	_, b2, err := x.Idempotent(e.ctx, request("k1", "other body"), do)
	if err != nil || n != 2 || string(b1) != "1" || string(b2) != "2" {
		t.Fatalf("after the TTL: %s then %s, %v, %d runs; want a new request", b1, b2, err, n)
	}
}

func TestIdempotentWithoutKeyRunsEveryTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.executor(nil, Options{})
	var got []string
	for range 2 {
		_, body, err := x.Idempotent(e.ctx, request("", "b"), func(ctx context.Context) (int, []byte, error) {
			id, err := x.NewID(ctx, "counter")
			return 200, fmt.Appendf(nil, "%d", id), err
		})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(body))
	}
	if got[0] != "1" || got[1] != "2" {
		t.Fatalf("ids %v, want 1 then 2", got)
	}
}

func TestIdempotentRejectsBadKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.executor(nil, Options{})
	for _, key := range []string{"a\nb", string(make([]byte, MaxIdempotencyKeyLen+1))} {
		if _, _, err := x.Idempotent(e.ctx, request(key, "b"), nil); !errors.Is(err, ErrInvalidIdempotencyKey) {
			t.Fatalf("key %q: err = %v", key, err)
		}
	}
}

// An attempt refused before it took an id or ran a command (a bad field)
// leaves the key free: the corrected request, another body, runs under it.
// Once an attempt has written, the key belongs to its request: another body
// is a mismatch even after that attempt failed.
func TestIdempotentKeyFreeAfterAnUnusedFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.executor(nil, Options{})
	bad := errors.New("pin_md5: must be 32 hexadecimal characters")
	refuse := func(context.Context) (int, []byte, error) { return 0, nil, bad }
	if _, _, err := x.Idempotent(e.ctx, request("k1", "bad body"), refuse); !errors.Is(err, bad) {
		t.Fatalf("refused attempt: %v", err)
	}
	s := &signup{x: x, name: "ann"}
	st, body, err := x.Idempotent(e.ctx, request("k1", "fixed body"), s.do)
	if err != nil || st != 201 || s.calls.Load() != 1 {
		t.Fatalf("corrected request under the same key: %d %s %v (%d runs)", st, body, err, s.calls.Load())
	}
	if st2, body2, err := x.Idempotent(e.ctx, request("k1", "fixed body"), s.do); err != nil || st2 != st || string(body2) != string(body) || s.calls.Load() != 1 {
		t.Fatalf("retry of the corrected request: %d %s %v, want the recorded %s", st2, body2, err, body)
	}

	// An attempt that wrote, then failed: the key stays its request's.
	boom := errors.New("boom")
	wrote := &signup{x: x, name: "bob", fail: func(step string) error { return boom }}
	if _, _, err := x.Idempotent(e.ctx, request("k2", "bob"), wrote.do); !errors.Is(err, boom) {
		t.Fatalf("failed attempt: %v", err)
	}
	if _, _, err := x.Idempotent(e.ctx, request("k2", "another body"), s.do); !errors.Is(err, ErrIdempotencyMismatch) {
		t.Fatalf("another body after a failed attempt that wrote: %v, want ErrIdempotencyMismatch", err)
	}
}

// The domain's list of personal data names this package's record of an
// idempotent answer by its type, with the members it has: the subject a
// number, the body the answer (bytes, a base64 string in JSON).
func TestIdempotencyRecordIsListedAsPersonal(t *testing.T) {
	p, ok := domain.PersonalDataOf(IdempotencyRecordedType)
	if !ok || p.Subject != "subject" || len(p.Fields) != 1 || p.Fields[0] != "body" || !p.SubjectOptional {
		t.Fatalf("personal data of %s: %+v, %v", IdempotencyRecordedType, p, ok)
	}
	reg := domain.NewRegistry()
	RegisterEvents(reg)
	_, data, err := reg.Encode(IdempotencyRecorded{Generation: 1, Status: 200, Body: []byte(`{"login":"x"}`), Subject: 7})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"subject":7`) || !strings.Contains(string(data), `"body":"`) {
		t.Fatalf("encoded record %s", data)
	}
	// An erased body reads as null: the record still decodes.
	e, err := reg.Decode(IdempotencyRecordedType, []byte(`{"generation":1,"status":200,"body":`+p.ErasedAs+`,"subject":7}`))
	if err != nil || e.(IdempotencyRecorded).Body != nil {
		t.Fatalf("an erased record: %+v, %v", e, err)
	}
}
