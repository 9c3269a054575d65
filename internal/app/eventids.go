package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"tvsm/eventstore"
	"tvsm/eventstore/record"
)

// eventNaming says how Execute names the events of one command (see the
// package documentation, "Event ids"). The events of an append are named
// record.Derived(name) when keyed, record.Sequenced(seq, name) otherwise,
// where name is:
//
//   - keyed (an idempotency key applies):
//     "idem|<scope key>|<stream>|<command fingerprint>|<ordinal>", the same
//     on every attempt and every retry of the request, so a repeat of an
//     append that already happened is recognised (by the store, and by
//     Execute scanning the stream for the first id);
//   - otherwise: "req|<request id>|<nonce of this Execute call, see nextCall>|<stream>|<expected revision>",
//     so one call re-sending the same append after an unknown outcome reuses
//     its ids (the store answers with the original result), while a re-decided
//     attempt (expected revision moved) or another call never collides, even
//     when a client reuses its X-Request-ID. With the call's seq, these ids
//     ascend from call to call, which the event store's id index inserts
//     cheaply.
type eventNaming struct {
	keyed bool
	// recovering: a previous attempt of this keyed request may have
	// appended already, so the stream must be read whole and scanned for
	// the command's first event id before deciding.
	recovering bool
	name       string // keyed: the full name; otherwise the prefix before "|<expected revision>"
	seq        uint64 // unkeyed: the call's sequence number
}

// ids names the events of an append with expectation expect.
func (n eventNaming) ids(expect eventstore.Revision) record.IDs {
	if n.keyed {
		return record.Derived(n.name)
	}
	if r, ok := expect.Exact(); ok {
		return record.Sequenced(n.seq, n.name+"|"+strconv.FormatUint(r, 10))
	}
	return record.Sequenced(n.seq, n.name+"|"+expect.String())
}

// keyedID is the id of event i of a keyed command: finding its first event
// in the stream means the command was applied by an earlier attempt.
func (n eventNaming) keyedID(i int) eventstore.EventID {
	return record.Derived(n.name).ID(i)
}

// naming decides the naming of a command on stream.
func naming(ctx context.Context, stream string, cmd any, meta RequestMeta) eventNaming {
	if sc := scopeFrom(ctx); sc != nil {
		sc.wrote.Store(true)
		if id, ok := strings.CutPrefix(stream, "account-"); ok {
			if n, err := strconv.ParseInt(id, 10, 64); err == nil {
				sc.subject.Store(n)
			}
		}
		fp := fingerprint(cmd)
		ord := sc.next(stream + "|" + fp)
		return eventNaming{
			keyed:      true,
			recovering: sc.recovering,
			name:       fmt.Sprintf("idem|%s|%s|%s|%d", sc.key, stream, fp, ord),
		}
	}
	return requestNaming(stream, cmd, meta)
}

// requestNaming is the naming of a command outside an idempotent request's
// work: by RequestMeta.IdempotencyKey, or per call.
func requestNaming(stream string, cmd any, meta RequestMeta) eventNaming {
	if meta.IdempotencyKey != "" {
		return eventNaming{
			keyed:      true,
			recovering: true,
			name:       fmt.Sprintf("key|%s|%s|%s|0", meta.IdempotencyKey, stream, fingerprint(cmd)),
		}
	}
	nonce, seq := nextCall()
	return eventNaming{name: "req|" + meta.RequestID + "|" + nonce + "|" + stream, seq: seq}
}

// fingerprint identifies a command value: its Go type and JSON encoding,
// hashed. Commands carry request data only (time comes as Decide's now), so
// the same request gives the same fingerprint on every retry, and different
// commands on one stream within one request get different event ids.
func fingerprint(cmd any) string {
	h := sha256.New()
	fmt.Fprintf(h, "%T\x00", cmd)
	if b, err := json.Marshal(cmd); err == nil {
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// idemScope is what Executor.Idempotent attaches to the context of the
// work it runs: the request's key (with generation), its pinned ids, how
// many commands with a given stream and fingerprint have been executed in
// this attempt, and whether the attempt wrote anything (took an id or ran
// a command) yet.
type idemScope struct {
	key        string
	recovering bool
	pins       *pins // the ids the request uses (Executor.NewID)
	wrote      atomic.Bool
	// subject is the account whose personal data the answer may carry
	// (NoteSubject): the last account the request wrote to.
	subject atomic.Int64

	mu     sync.Mutex
	counts map[string]int
}

type scopeKey struct{}

// NoteSubject tells the idempotent request running in ctx, if any, that
// its answer carries personal data of account id: the answer it records
// is then sealed under that account's key, and erased with it. A command
// on an account's stream notes its account by itself.
func NoteSubject(ctx context.Context, id int64) {
	if sc := scopeFrom(ctx); sc != nil {
		sc.subject.Store(id)
	}
}

func withScope(ctx context.Context, sc *idemScope) context.Context {
	return context.WithValue(ctx, scopeKey{}, sc)
}

func scopeFrom(ctx context.Context) *idemScope {
	sc, _ := ctx.Value(scopeKey{}).(*idemScope)
	return sc
}

// withoutScope hides the request's scope from bookkeeping commands (the
// idempotency record itself), which are named per call instead.
func withoutScope(ctx context.Context) context.Context {
	if scopeFrom(ctx) == nil {
		return ctx
	}
	return context.WithValue(ctx, scopeKey{}, (*idemScope)(nil))
}

func (s *idemScope) next(k string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counts == nil {
		s.counts = make(map[string]int)
	}
	n := s.counts[k]
	s.counts[k] = n + 1
	return n
}
