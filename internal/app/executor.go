package app

import (
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/record"
)

// Options tune an Executor. The zero value is ready to use; every field has
// a default applied by New.
type Options struct {
	// Clock gives the time of commands (default time.Now). Execute passes
	// Clock().UTC().Round(0) to Decide unless RequestMeta.Now is set.
	Clock func() time.Time
	// MaxAttempts bounds how many times a command is decided and appended
	// when appends keep conflicting or have unknown outcomes (default 5;
	// record.Policy.MaxAttempts). The error after the last conflict wraps
	// ErrConflict.
	MaxAttempts int
	// RetryDelay is the base of the jittered, exponentially growing pause
	// between attempts (default 2ms; record.Policy.BaseDelay).
	RetryDelay time.Duration
	// CacheSize is how many streams' states are kept in memory (those not
	// used for longest are evicted, by CLOCK; default 10000; negative
	// disables the cache).
	CacheSize int
	// IDBlockSize is how many integer ids an IDAllocator reserves per append
	// to its id stream (default 1000). Reserving a block stalls every
	// allocation of the kind for one durable append, so blocks are large;
	// the ids of a block left unused when the process stops are skipped.
	IDBlockSize int
	// IdempotencyLease is how long one attempt of an idempotent request owns
	// its key without renewing it (default 3s). The attempt renews it while
	// its work runs (after a third of it has passed), and its work's
	// context ends a third of a lease before a lease it could not renew
	// runs out, so no work goes on past its lease. A retry arriving while
	// the lease holds, and the response is not recorded, gets
	// ErrIdempotencyInProgress; a later one takes over: after a crash the
	// key is in doubt for one lease at most.
	IdempotencyLease time.Duration
	// IdempotencyMaxWork bounds the work of one attempt, renewals included
	// (default 30s).
	IdempotencyMaxWork time.Duration
	// IdempotencyTTL is how long a recorded response is replayed (default
	// 24h, counted from when it was recorded). After it the key is new again.
	IdempotencyTTL time.Duration
	// ReservationGrace is how old a reservation must be before Reserve may
	// take it over from an owner that does not exist (default 1m): the time
	// a request has between reserving a name and creating its owner.
	ReservationGrace time.Duration
	// NameKey keys the hashes that stand for personal names (logins) in
	// stream names (LoginStream), so that a stream name tells nothing of
	// the login to whoever lacks the key. Nodes sharing a store share it.
	// Nil hashes without a key: for tests only.
	NameKey []byte
}

// DefaultIdempotencyLease is Options.IdempotencyLease's default: short, so
// that a retry after a crash waits little, and renewed while work runs.
const DefaultIdempotencyLease = 3 * time.Second

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 5
	}
	if o.RetryDelay <= 0 {
		o.RetryDelay = 2 * time.Millisecond
	}
	if o.CacheSize == 0 {
		o.CacheSize = 10000
	}
	if o.IDBlockSize <= 0 {
		o.IDBlockSize = 1000
	}
	if o.IdempotencyLease <= 0 {
		o.IdempotencyLease = DefaultIdempotencyLease
	}
	if o.IdempotencyMaxWork <= 0 {
		o.IdempotencyMaxWork = 30 * time.Second
	}
	if o.IdempotencyTTL <= 0 {
		o.IdempotencyTTL = 24 * time.Hour
	}
	if o.ReservationGrace <= 0 {
		o.ReservationGrace = time.Minute
	}
	return o
}

// Executor runs commands against the event store: it is the one place where
// streams are loaded, decided on, appended to and retried. It also owns the
// state cache, the per-stream locks and the id allocators. Create one per
// process with New; it is safe for concurrent use.
type Executor struct {
	rec   record.Log // the store and registry, with the retry policy of Options
	opts  Options
	cache *stateCache
	locks streamLocks

	idsMu sync.Mutex
	ids   map[string]*IDAllocator
}

// New returns an Executor over store, decoding and encoding events with reg.
// reg must hold this package's events (RegisterEvents) besides the domain's.
func New(store eventstore.Store, reg *domain.Registry, opts Options) (*Executor, error) {
	if store == nil || reg == nil {
		return nil, fmt.Errorf("app: new executor: store and registry are required")
	}
	registered := make(map[string]bool)
	for _, name := range reg.Types() {
		registered[name] = true
	}
	for _, name := range eventTypes {
		if !registered[name] {
			return nil, fmt.Errorf("app: new executor: registry lacks %s; call app.RegisterEvents", name)
		}
	}
	opts = opts.withDefaults()
	return &Executor{
		rec:   record.Log{Store: store, Registry: reg, Policy: record.Policy{MaxAttempts: opts.MaxAttempts, BaseDelay: opts.RetryDelay}},
		opts:  opts,
		cache: newStateCache(opts.CacheSize),
		ids:   make(map[string]*IDAllocator),
	}, nil
}

// Store returns the event store the executor writes to.
func (x *Executor) Store() eventstore.Store { return x.rec.Store }

// Registry returns the registry the executor encodes and decodes events with.
func (x *Executor) Registry() *domain.Registry { return x.rec.Registry }

// Log returns the executor's store and registry with its retry policy, for
// events that no decision makes (a device's viewing report) and for
// reading streams back.
func (x *Executor) Log() record.Log { return x.rec }

// now returns the command time: UTC, no monotonic reading.
func (x *Executor) now() time.Time { return x.opts.Clock().UTC().Round(0) }

// RequestMeta is who and what caused a command; it becomes the metadata of
// every event the command appends.
type RequestMeta struct {
	Actor     domain.Actor
	RequestID string
	// IdempotencyKey, when set and the context does not come from
	// Executor.Idempotent, names this command for retries: its events get
	// ids derived from the key, and a repeat of the command with the same key
	// on the same stream returns the first outcome instead of deciding again.
	// Inside Idempotent the request's key is used and this field is ignored.
	IdempotencyKey string
	// Now is the time of the command; zero means the Executor's clock.
	Now time.Time
	// NewStream says the stream was just named (a freshly allocated id), so
	// Execute decides on the initial state without reading it. The append
	// still expects no stream: if it has events after all, Execute reads it
	// and decides again, as after any conflict.
	NewStream bool
}

// metadata is what the events of the command carry, decided at meta.Now.
func (meta RequestMeta) metadata() domain.Metadata {
	return domain.Metadata{OccurredAt: meta.Now, Actor: meta.Actor, RequestID: meta.RequestID}
}

// nonce returns 16 random bytes in hex, for names no retry shares.
func nonce() string {
	var b [16]byte
	_, _ = crand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// callNonces makes the names of Execute calls: a random prefix drawn once
// per process, then a counter. No two calls of one process share a name
// and, with 128 random bits, no two processes do either. Every Execute
// names its events with one (two for an account create), and reading
// crypto/rand each time cost about 0.4 µs apiece.
//
// Each call also gets a sequence number, which orders its event ids
// (eventstore.SequencedEventID): the process's start time in µs, times 256,
// plus the counter. A process started later starts above every number an
// earlier one reached unless that one made 256 calls per µs, so the ids of
// a node's events ascend across restarts too; uniqueness does not rest on
// it (see SequencedEventID).
var callNonces = struct {
	prefix string
	base   uint64
	n      atomic.Uint64
}{prefix: nonce() + ".", base: uint64(time.Now().UnixMicro()) << 8}

// nextCall returns a name no other Execute call shares and the call's
// sequence number.
func nextCall() (name string, seq uint64) {
	n := callNonces.n.Add(1)
	return callNonces.prefix + strconv.FormatUint(n, 36), callNonces.base + n
}
