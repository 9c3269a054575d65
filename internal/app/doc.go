// Package app is the application layer: every command goes through it. It
// loads an aggregate's stream, decides, appends with the expected revision
// and retries on conflict (Execute); allocates integer ids through the event
// store (IDAllocator); makes POSTs with an Idempotency-Key happen once
// (Executor.Idempotent); keeps names unique with reservation streams
// (Executor.Reserve); and waits for the read model to apply a write
// (WaitApplied).
//
// # Executing a command
//
// Execute(ctx, x, stream, decider, cmd, meta) serialises commands on one
// stream within the process, takes the state from a bounded LRU cache of
// (state, revision, position) per stream or rebuilds it by reading the
// stream, decides, and appends the events with Exact(revision) (NoStream
// for a new stream). Events are encoded, named and appended through
// eventstore/record, whose Policy (Options.MaxAttempts, Options.RetryDelay)
// resends an append whose outcome is unknown (a transport error) as it is.
// When the append loses the race it drops the cache entry, pauses a few
// jittered milliseconds, re-reads the stream and decides again; resends and
// lost races together count up to Options.MaxAttempts (5), then it fails
// with ErrConflict. A store may refuse an append because of an event its
// readers do not show yet (EventStoreDB's double shows only fsynced
// events; a follower's reads lag the leader): the re-read then goes on,
// with growing pauses for up to 5 s, until the stream shows the revision
// the refusal reported, so the next decision is made on the winner's
// events.
// A cached state is only a possibly old prefix of the stream: a decision
// that appends is checked by the expected revision; a decision that appends
// nothing, or fails, is trusted only after reading the stream's tail (one
// cheap read), so a change made by another node is never missed.
//
// # Event ids
//
// The events of an append are named from a name (record.Derived: event i
// gets eventstore.DeriveEventID(name, i); with no key record.Sequenced, i.e.
// SequencedEventID) that depends on whether an idempotency key applies:
//
//   - No key: name = "req|<request id>|<nonce>|<stream>|<expected revision>",
//     with a nonce no other Execute call shares. Re-sending the same append after
//     an unknown outcome (a transport error) reuses the ids, so the store
//     answers a stored append with its original result instead of storing it
//     twice; a re-decided attempt expects another revision and gets new ids;
//     another call never collides, even if a client reuses its X-Request-ID.
//     These ids are eventstore.SequencedEventID(seq, name, i) with a sequence
//     number per call that ascends, so the event store's id index receives
//     them in order.
//   - Key (inside Idempotent, or RequestMeta.IdempotencyKey):
//     name = "idem|<sha256(scope, key)>|<generation>|<stream>|<fingerprint>|<n>"
//     (with an explicit RequestMeta key: "key|<key>|<stream>|<fingerprint>|0"),
//     where fingerprint is a hash of the command's Go type and JSON, and n
//     counts earlier commands with the same stream and fingerprint in this
//     attempt. The name does not depend on the attempt, the expected revision
//     or the time, so every retry of the request names the command's events
//     alike. Re-deciding on a stream an earlier attempt already changed may
//     produce other events (or an error: "already exists"), so a retry does
//     not rely on the store alone: when the command may have been applied
//     before (a retried attempt, or an explicit key), Execute reads the whole
//     stream and looks for the event with the command's first id; if it is
//     there, Execute returns that earlier outcome (the events found, the
//     current state) without deciding. A first attempt cannot have been
//     applied before and uses the cache. An append rejected because its ids
//     are already stored (ErrDuplicateEventID) also leads to that search.
//
// # Idempotency-Key
//
// Idempotent keeps one record stream per key, "idem-" + hex(SHA-256(scope ||
// NUL || key)), where scope names the client's key space (provider and
// route). Its events:
//
//  1. IdempotencyStarted{RequestHash, Generation, Attempt, LeaseUntil}: appended
//     before any work, with NoStream for a new key (of concurrent requests
//     with one key exactly one starts) or the exact revision for a takeover.
//     The attempt owns the key until LeaseUntil (Options.IdempotencyLease,
//     3s) and renews it while its work runs (IdempotencyLeaseExtended, a
//     third of a lease before the work's deadline); the work's context
//     ends a third of a lease before a lease it could not renew runs out,
//     so work never goes on past its lease, and a key whose attempt died
//     is free one lease later at most.
//  2. IdempotencyIDPinned{Kind, Index, ID}: appended by Pins.ID before an id is
//     used, so a retry reuses the same account/subscription/... ids, hence
//     the same streams and the same event ids.
//  3. IdempotencyRecorded{Status, Body}: the response, replayed to retries;
//     or IdempotencyFailed: the work returned an error (nothing is recorded
//     as a response, and a retry may take over at once).
//
// A request with a known key: another body → ErrIdempotencyMismatch (HTTP 422,
// per the IETF Idempotency-Key draft); a recorded response → that response;
// an attempt still within its lease → ErrIdempotencyInProgress (HTTP 409, an
// *InProgressError saying how long the lease still runs);
// otherwise (lease expired after a crash, or the last attempt failed) a new
// attempt of the same generation, which re-runs the work with the pinned ids
// in recovering mode: each Execute finds the commands the interrupted
// attempt applied and appends only what is missing. After
// Options.IdempotencyTTL (24h) from the response (or the last lease) the key
// starts a new generation: a new request with fresh ids.
//
// # Unique names
//
// A login is unique within a provider through the stream
// "login-{provider}-{login}" (LoginStream). Reserve appends
// ReservationTaken{Owner} with NoStream (or the exact revision after a
// release), so exactly one concurrent caller wins; reserving again for the
// same owner is a no-op; Release appends ReservationReleased. Creating an
// account with a unique login goes:
//
//  1. id := pins.ID(ctx, "account") (pinned when the request is keyed);
//  2. Reserve(login stream, owner "account-{id}", isAlive) — ErrTaken → 400;
//  3. Execute the account creation on "account-{id}";
//  4. if 3 fails, Release(login stream, "account-{id}").
//
// (When the store appends to several streams atomically, ExecuteReserving
// does 2 and 3 in one append; EventStoreDB cannot, and takes the steps
// above.) Changing a login reserves the new name first, updates the
// account, then releases the old name. A crash between 2 and 3 leaves a
// reservation whose owner does not exist; a crash in the middle of a login
// change, one whose owner exists under another login. A retry with the same
// Idempotency-Key repairs the first by itself (same pinned id, so Reserve is
// a no-op for the same owner). Otherwise the next request for that login
// repairs it: Reserve calls isAlive for the holder, and when the holder does
// not hold the name any more (for accounts: its stream is missing, the
// account is deleted, or its login is another) and the reservation is older
// than Options.ReservationGrace (1m), takes it over, appending
// ReservationTaken with Evicted set. The grace period keeps a request that has reserved but
// not yet created its account from being robbed; such a request must finish
// within it (HTTP handler timeout < grace).
//
// # Integer ids
//
// IDAllocator (Executor.IDs(kind), NextID) hands out ids from 1 upwards,
// unique across nodes: it appends IDBlockReserved{From, To} to "ids-{kind}"
// with the exact expected revision, so blocks never overlap, then serves the
// block from memory (Options.IDBlockSize, 100, ids per append). Ids are
// increasing per allocator, not dense: a block's unused rest is lost at exit.
//
// Objects copied from another system keep their ids: ReserveImport appends
// a block marked Import, from above the highest id reserved by anyone up to
// the highest id to import, which no allocator ever serves; a create run
// with WithImportID takes its id from the context instead of the allocator,
// and only when that id lies in such a block (ErrIDNotImported otherwise),
// so an imported object never lands on an id a node may hand out.
//
// # Errors
//
// Errors name the operation and stream (*OpError) and wrap the cause;
// decide errors keep their identity for errors.Is. HTTP maps: ErrConflict
// 409, ErrIdempotencyInProgress 409, ErrIdempotencyMismatch 422,
// ErrInvalidIdempotencyKey 400, ErrTaken 400, ErrReadModelLag 503.
package app
