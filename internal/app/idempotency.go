package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"time"

	"tvsm/internal/platform/schedule"
)

// MaxIdempotencyKeyLen is the longest Idempotency-Key accepted, in bytes.
const MaxIdempotencyKeyLen = 255

// recordTimeout bounds the appends that record an attempt's outcome; they
// run even when the request's context has ended, because the work is done.
const recordTimeout = 10 * time.Second

// IdempotentRequest is a request that carries an Idempotency-Key.
type IdempotentRequest struct {
	// Key is the client's Idempotency-Key; empty means the request is not
	// idempotent and do simply runs (with pins that are not recorded).
	Key string
	// Scope is the key space the key belongs to, so two clients' keys never
	// meet: for example "provider:3 POST /api/provider/accounts".
	Scope string
	// Body is the request body; a retry must send the same bytes.
	Body []byte
	// Meta is the actor and request id recorded on the bookkeeping events.
	Meta RequestMeta
}

// IdempotentFunc does the work of a request. It must do all its writes
// through Execute with the ctx it is given and take every new id from
// Executor.NewID with that ctx, so that a retry of an interrupted attempt
// finds what was already done. A response it returns (any status) is
// recorded and replayed to retries; an error is not recorded, and the next
// retry redoes the work.
type IdempotentFunc func(ctx context.Context) (status int, body []byte, err error)

// IdempotencyStream returns the stream of the idempotency record of key in
// scope: "idem-" and the hex SHA-256 of scope, a NUL byte and key.
func IdempotencyStream(scope, key string) string {
	return "idem-" + idemHash(scope, key)
}

func idemHash(scope, key string) string {
	h := sha256.New()
	h.Write([]byte(scope))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return hex.EncodeToString(h.Sum(nil))
}

// Idempotent runs do at most once per key and request body, as far as
// anyone can observe: a retry with the same key and body gets the recorded
// response, or, when the first attempt was interrupted before its response
// was recorded, redoes the work with the same pinned ids and the same event
// ids, so that what was already appended is found instead of appended again.
//
// It fails with an error matching ErrIdempotencyMismatch when the key was
// used with another body (HTTP 422), ErrIdempotencyInProgress while another
// attempt holds the key's lease (HTTP 409) and ErrInvalidIdempotencyKey for a
// malformed key (HTTP 400). The package documentation describes the record
// and the event id scheme.
func (x *Executor) Idempotent(ctx context.Context, req IdempotentRequest, do IdempotentFunc) (int, []byte, error) {
	if req.Key == "" {
		return do(ctx)
	}
	stream := IdempotencyStream(req.Scope, req.Key)
	if err := validIdempotencyKey(req.Key); err != nil {
		return 0, nil, err // the caller's mistake: no stream of ours in it
	}
	book := withoutScope(ctx)
	sum := sha256.Sum256(req.Body)
	res, err := Execute(book, x, stream, idemDecider, idemCmd{
		Op: idemBegin, Key: req.Key, Scope: req.Scope, Hash: hex.EncodeToString(sum[:]),
		Lease: x.opts.IdempotencyLease, TTL: x.opts.IdempotencyTTL,
	}, req.Meta)
	if err != nil {
		return 0, nil, err
	}
	if len(res.Events) == 0 { // answered before
		return res.State.Status, res.State.Body, nil
	}
	started := res.Events[0].Event.(IdempotencyStarted)
	scope := &idemScope{
		key:        stream[len("idem-"):] + "|" + strconv.Itoa(started.Generation),
		recovering: started.Attempt > 1,
	}
	scope.pins = &pins{x: x, stream: stream, generation: started.Generation, meta: req.Meta, pinned: res.State.Pins}
	work, cancel := context.WithTimeout(withScope(ctx, scope), x.opts.IdempotencyMaxWork)
	defer cancel()
	held := x.holdLease(book, stream, started, req.Meta)
	defer held.release() // also when do panics: a lease renewed for ever would hold the key for ever
	stop := context.AfterFunc(held, cancel)
	status, body, derr := do(work)
	stop()
	cancel()
	if derr != nil && held.Err() != nil {
		derr = fmt.Errorf("%w: %w", errLeaseLost, derr) // the work was stopped
	}
	held.release()

	rec, rcancel := context.WithTimeout(context.WithoutCancel(book), recordTimeout)
	defer rcancel()
	if derr != nil {
		// Best effort: without it the next retry waits for the lease. An
		// attempt refused before it wrote anything (a bad field) leaves the
		// key unused, so the corrected request may use it.
		_, _ = Execute(rec, x, stream, idemDecider, idemCmd{Op: idemFail, Generation: started.Generation, Attempt: started.Attempt,
			Error: derr.Error(), Unused: !scope.wrote.Load()}, req.Meta)
		return 0, nil, derr
	}
	res, err = Execute(rec, x, stream, idemDecider, idemCmd{Op: idemRecord, Generation: started.Generation, Status: status, Body: body,
		Subject: scope.subject.Load()}, req.Meta)
	if err == nil && len(res.Events) == 0 && res.State.Done && res.State.Generation == started.Generation {
		return res.State.Status, res.State.Body, nil // a concurrent attempt recorded first
	}
	// When recording failed the work is nonetheless done and this is its
	// response; a retry after the lease redoes the work as a no-op.
	return status, body, nil
}

// lease is an attempt's hold on its key, renewed while its work runs. Its
// context ends when the work must stop: a third of a lease before a lease
// it could not renew runs out, so that the work's last appends land within
// it (clocks of nodes may differ by less than that).
type lease struct {
	context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the renewing goroutine returned
}

// release stops renewing and waits until the renewing goroutine is done;
// calling it again does nothing more.
func (l *lease) release() {
	l.cancel()
	<-l.done
}

// holdLease renews the lease started took, a third of a lease before the
// deadline of its work, until released or a renewal fails.
func (x *Executor) holdLease(book context.Context, stream string, started IdempotencyStarted, meta RequestMeta) *lease {
	ctx, cancel := context.WithCancel(context.WithoutCancel(book))
	l := &lease{Context: ctx, cancel: cancel, done: make(chan struct{})}
	margin := x.opts.IdempotencyLease / 3
	go func() {
		defer close(l.done)
		defer cancel()
		for until := started.LeaseUntil; ; {
			deadline := until.Add(-margin)
			if !schedule.Sleep(ctx, deadline.Add(-margin).Sub(x.opts.Clock())) {
				return // released
			}
			rctx, rcancel := context.WithTimeout(ctx, deadline.Sub(x.opts.Clock()))
			res, err := Execute(rctx, x, stream, idemDecider, idemCmd{Op: idemExtend, Generation: started.Generation,
				Attempt: started.Attempt, Lease: x.opts.IdempotencyLease}, meta)
			rcancel()
			if err != nil {
				// The work ends at its deadline: this attempt may no longer
				// hold the key after it.
				schedule.Sleep(ctx, deadline.Sub(x.opts.Clock()))
				return
			}
			until = res.State.LeaseUntil
		}
	}()
	return l
}

func validIdempotencyKey(key string) error {
	if len(key) > MaxIdempotencyKeyLen {
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalidIdempotencyKey, MaxIdempotencyKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return fmt.Errorf("%w: byte %#02x at %d is not printable ASCII", ErrInvalidIdempotencyKey, key[i], i)
		}
	}
	return nil
}

// NewID returns a new id of kind (see IDAllocator). Within the work of an
// idempotent request (the ctx Idempotent gives it) it returns the request's
// next id of kind, the same one on every retry: the n-th call for a kind
// returns the n-th id pinned for it, allocating and recording (appending
// IdempotencyIDPinned, before returning it) the ids no earlier attempt got
// to. The order of concurrent calls for one kind decides which gets which.
//
// Within an import (WithImportID) it returns the import's id instead, once,
// when that id lies in a range reserved for import.
func (x *Executor) NewID(ctx context.Context, kind string) (int64, error) {
	if imp, ok := ctx.Value(importIDKey{}).(*importID); ok {
		return imp.take(ctx, x.IDs(kind))
	}
	if sc := scopeFrom(ctx); sc != nil {
		sc.wrote.Store(true)
		return sc.pins.id(ctx, kind)
	}
	return x.NextID(ctx, kind)
}

// pins are the ids an idempotent request has used, recorded in its
// idempotency stream so that every retry uses the same ones.
type pins struct {
	x          *Executor
	stream     string
	generation int
	meta       RequestMeta

	mu     sync.Mutex
	pinned map[string][]int64
	used   map[string]int
}

// id returns the request's next id of kind.
func (p *pins) id(ctx context.Context, kind string) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used == nil {
		p.used = make(map[string]int)
	}
	i := p.used[kind]
	if i < len(p.pinned[kind]) {
		p.used[kind]++
		return p.pinned[kind][i], nil
	}
	id, err := p.x.NextID(ctx, kind)
	if err != nil {
		return 0, err
	}
	res, err := Execute(withoutScope(ctx), p.x, p.stream, idemDecider, idemCmd{Op: idemPin, Generation: p.generation, Kind: kind, Index: i, ID: id}, p.meta)
	if err != nil {
		return 0, err
	}
	p.pinned = res.State.Pins
	if i >= len(p.pinned[kind]) {
		return 0, opError("pin", p.stream, fmt.Errorf("%s id #%d not recorded", kind, i))
	}
	p.used[kind]++
	return p.pinned[kind][i], nil
}
