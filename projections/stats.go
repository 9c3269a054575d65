package projections

import (
	"time"

	"tvsm/eventstore"
)

// Stats describes a Runner for metrics and health checks.
type Stats struct {
	// Name is the handler's name.
	Name string
	// Position is the last applied position (the same as Progress).
	Position eventstore.Position
	// EventsApplied and Batches count what Apply was given since Run
	// started, redeliveries after failures included.
	EventsApplied uint64
	Batches       uint64
	// CaughtUp is set once the runner has applied everything that was in the
	// log when it first reached the head; it stays set across reconnects.
	CaughtUp bool
	// Live is set while the current subscription has reached the head of
	// the log: cleared when it fails (a store that went away), set again
	// once a resubscription has caught up. Readiness reports it.
	Live bool
	// Replaying is set while a rebuild applies history with Mode Replay.
	Replaying bool
	// Reconnects counts resubscriptions after failures or stalls.
	Reconnects uint64
	// LastError is the most recent failure, "" when there was none.
	LastError string
	// Panicked is set when the handler panicked (the panic was recovered,
	// logged and counted, and the runner resubscribes as after any failure)
	// and no batch has been applied since: the projection is stuck, which
	// readiness reports.
	Panicked bool
	// LastBatch is when the last batch was handled (zero before the first).
	LastBatch time.Time
}
