package projections

import (
	"context"
	"fmt"

	"tvsm/domain"
	"tvsm/eventstore"
)

// ReplayProgress is told what ReplayTo has applied: after each batch, the
// position the log has been read through and how many events the batch
// gave the handler.
type ReplayProgress func(through eventstore.Position, events int)

// ReplayTo feeds h the events of the log after position after, up to and
// including position through, decoded as a Runner decodes them (DecoderFor)
// and applied in Mode Replay (no side effects), and returns the position it read the log through:
// through, or less when the log ends before it. Events after through that
// arrive in the same batch are not applied, so two handlers replayed to the
// same position hold the same events.
//
// Unlike a Runner it is a bounded job: it stops at through (or at the
// head), and any failure ends it with the error, without a retry. A
// rebuild builds a new version of a projection with it, beside the live
// one, and a check brings a fresh copy to the position of a capture of the
// live state. progress may be nil.
func ReplayTo(ctx context.Context, store eventstore.Store, reg *domain.Registry, h Handler, after, through eventstore.Position,
	progress ReplayProgress) (eventstore.Position, error) {
	if !through.After(after) {
		return after, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sub, err := store.SubscribeAll(ctx, after, h.Filter())
	if err != nil {
		return after, fmt.Errorf("projections: replay %s after %v: %w", h.Name(), after, err)
	}
	defer sub.Close()
	dec := DecoderFor(reg, h)
	read := after
	for {
		b, err := sub.Recv(ctx)
		if err != nil {
			return read, fmt.Errorf("projections: replay %s after %v: %w", h.Name(), read, err)
		}
		events := b.Events
		cut := len(events)
		for cut > 0 && events[cut-1].Position.After(through) {
			cut--
		}
		if cut > 0 {
			if err := h.Apply(ctx, dec.Decode(events[:cut]), Replay); err != nil {
				return read, fmt.Errorf("projections: replay %s: apply %d events up to %v: %w", h.Name(), cut, events[cut-1].Position, err)
			}
			read = events[cut-1].Position
		}
		done := cut < len(events) || b.Checkpoint.Compare(through) >= 0
		if done {
			read = through
		} else if b.Checkpoint.After(read) {
			read = b.Checkpoint
		}
		if progress != nil {
			progress(read, cut)
		}
		// A caught-up batch below through: the log holds nothing more yet.
		if done || b.CaughtUp {
			return read, nil
		}
	}
}
