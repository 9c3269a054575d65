package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"time"
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
// through Execute with the ctx it is given and take every new id from pins,
// so that a retry of an interrupted attempt finds what was already done.
// A response it returns (any status) is recorded and replayed to retries;
// an error is not recorded, and the next retry redoes the work.
type IdempotentFunc func(ctx context.Context, pins *Pins) (status int, body []byte, err error)

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
		return do(ctx, &Pins{x: x})
	}
	stream := IdempotencyStream(req.Scope, req.Key)
	if err := validIdempotencyKey(req.Key); err != nil {
		return 0, nil, opError("idempotent", stream, err)
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
	pins := &Pins{x: x, stream: stream, generation: started.Generation, meta: req.Meta, pinned: res.State.Pins}
	work, cancel := context.WithTimeout(withScope(ctx, scope), x.opts.IdempotencyLease)
	status, body, derr := do(work, pins)
	cancel()

	rec, rcancel := context.WithTimeout(context.WithoutCancel(book), recordTimeout)
	defer rcancel()
	if derr != nil {
		// Best effort: without it the next retry waits for the lease.
		_, _ = Execute(rec, x, stream, idemDecider, idemCmd{Op: idemFail, Generation: started.Generation, Attempt: started.Attempt, Error: derr.Error()}, req.Meta)
		return 0, nil, derr
	}
	res, err = Execute(rec, x, stream, idemDecider, idemCmd{Op: idemRecord, Generation: started.Generation, Status: status, Body: body}, req.Meta)
	if err == nil && len(res.Events) == 0 && res.State.Done && res.State.Generation == started.Generation {
		return res.State.Status, res.State.Body, nil // a concurrent attempt recorded first
	}
	// When recording failed the work is nonetheless done and this is its
	// response; a retry after the lease redoes the work as a no-op.
	return status, body, nil
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

// Pins hands out the new integer ids an idempotent request uses, the same
// ones on every retry: the n-th ID call for a kind returns the n-th id
// pinned for it, allocating and recording (appending IdempotencyIDPinned,
// before returning it) the ids no earlier attempt got to. Outside a keyed
// request it just allocates. Safe for concurrent use, though the order of
// concurrent calls for one kind decides which call gets which id.
type Pins struct {
	x          *Executor
	stream     string // "" when the request has no key
	generation int
	meta       RequestMeta

	mu     sync.Mutex
	pinned map[string][]int64
	used   map[string]int
}

// ID returns the request's next id of kind.
func (p *Pins) ID(ctx context.Context, kind string) (int64, error) {
	if p.stream == "" {
		return p.x.NextID(ctx, kind)
	}
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
