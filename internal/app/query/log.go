package query

import (
	"context"
	"fmt"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/record"
)

// envelopes reads a whole stream with each event's metadata; the error
// wraps eventstore.ErrStreamNotFound when the stream has no events.
func (r *reader) envelopes(ctx context.Context, stream string) ([]domain.Envelope, error) {
	out, head, err := record.Fold(ctx, r.rec, stream, record.Head{}, nil,
		func(out []domain.Envelope, e domain.Event, rec eventstore.RecordedEvent) ([]domain.Envelope, error) {
			env, err := record.Envelope(e, rec)
			return append(out, env), err
		})
	if err != nil {
		return nil, err
	}
	if !head.Exists {
		return nil, fmt.Errorf("read %s: %w", stream, eventstore.ErrStreamNotFound)
	}
	return out, nil
}
