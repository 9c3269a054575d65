package projections

import (
	"context"
	"fmt"
	"iter"

	"tvsm/eventstore"
)

// Handler is a projection: it turns events of the global log into derived
// state (a read model, statistics facts, pushed device commands).
type Handler interface {
	// Name identifies the handler and keys its checkpoint. Treat it as a
	// versioned schema id such as "readmodel.v1": a new name has no
	// checkpoint, so changing it means a full replay of the log. Change it
	// deliberately when the projected state's shape or meaning changes, and
	// build the new version next to the old one (blue/green).
	Name() string
	// Filter selects the events the handler wants. The runner still advances
	// the checkpoint past events the filter drops.
	Filter() eventstore.Filter
	// Apply applies a batch of events, in log order, decoded by the runner
	// (Event; the batch is decoded ahead while Apply ranges over it, and
	// an *Event is valid during its iteration only). It must be idempotent:
	// after a failure (of Apply itself, of saving the checkpoint, of the
	// subscription or of the process) the runner delivers the same events
	// again, and applying them twice must leave the same state as applying
	// them once. Use upserts keyed by entity, sets of event or session ids,
	// or per-entity revisions; never blind increments.
	//
	// In Replay mode the handler must not cause side effects outside its own
	// state (websocket pushes, outbound calls, emails).
	Apply(ctx context.Context, events iter.Seq[*Event], mode Mode) error
}

// Mode tells Apply whether it may cause side effects. The zero value is not a
// valid mode.
type Mode uint8

const (
	// Live is normal processing: side effects are allowed.
	Live Mode = iota + 1
	// Replay is a rebuild of state from history: side effects such as
	// websocket pushes or outbound calls must be suppressed (Marten's
	// RaiseSideEffects), or a rebuild would, for example, re-send every device
	// command ever issued.
	Replay
)

// SideEffects reports whether a handler may cause side effects in mode m.
func (m Mode) SideEffects() bool { return m == Live }

func (m Mode) String() string {
	switch m {
	case Live:
		return "live"
	case Replay:
		return "replay"
	default:
		return fmt.Sprintf("Mode(%d)", uint8(m))
	}
}
