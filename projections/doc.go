// Package projections turns the global event log into derived state.
//
// A Handler (a read model, the statistics projector, the websocket gateway)
// declares which events it wants and applies them in batches. A Runner feeds
// it: it subscribes to the log after the handler's checkpoint, decodes every
// batch once (Event: payload, parsed stream name, when it happened; ahead on
// every core while the handler applies), applies it, saves the checkpoint
// (never backwards), publishes the applied position through a Progress (for
// read-your-writes), resubscribes with jittered exponential backoff after
// any failure, and resubscribes a stalled subscription found by its
// watchdog.
//
// Delivery is at least once: after a failure the runner resubscribes from the
// last saved checkpoint, so a handler may see a batch again. Every handler
// must therefore be idempotent.
//
// In-memory read models persist themselves with WriteSnapshot, which stores
// the state and its log position together; see SnapshotCheckpoints.
package projections
