// Package record is the one way tvsm writes domain events to an event store
// and reads them back: it encodes events with the registry, stamps them with
// one metadata, names them, appends them and resends an append whose outcome
// is unknown (Log, Batch, IDs, Policy), and folds a stream's events, decoded,
// into a state (Fold, Read, First).
//
// # Event ids
//
// The caller chooses the ids of its events; they are part of the stored data
// and are what makes a repeated append harmless, so a writer's scheme never
// changes once events carry it. IDs expresses the choice:
//
//   - Derived(name): event i gets eventstore.DeriveEventID(name, i). The same
//     name gives the same ids, so a request repeated under one name (an
//     idempotency key, a claim, a receipt) stores its events once.
//   - Sequenced(seq, name): eventstore.SequencedEventID(seq, name, i), ids
//     that ascend with seq, which an event store's id index inserts cheaply.
//   - Random(): a fresh eventstore.NewEventID per event, for events no
//     request can repeat.
//   - Explicit(ids...): ids the caller computed itself, one per event.
//
// Whatever the scheme, the ids are chosen once per append and kept for its
// resends: the store answers an append whose events are already stored, in
// the same stream and order, with where they are instead of storing them
// again (see eventstore.Store).
//
// # Retries
//
// Policy is the one retry policy. An append that fails with a verdict of
// the store (ErrWrongExpectedRevision, ErrDuplicateEventID,
// ErrInvalidAppend, ErrClosed, ErrStreamNotFound), or after the caller's
// context ended, is not resent: the verdict is final and is the caller's to
// act on (a lost race is re-decided by the caller, not here). Any other
// error leaves open whether the events were stored, so the identical append
// (same ids, same expectation) is sent again after a jittered exponential
// pause, up to Policy.MaxAttempts sends; a send that was stored after all is
// answered with its original result. Policy.AttemptTimeout bounds each send
// when set; a send that runs out of it has an unknown outcome too.
package record
