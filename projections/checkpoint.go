package projections

import (
	"context"

	"tvsm/eventstore"
)

// CheckpointStore keeps, per handler name, the log position up to which the
// handler's state is durable.
type CheckpointStore interface {
	// Load returns the stored checkpoint of name, or eventstore.Beginning
	// when there is none.
	Load(ctx context.Context, name string) (eventstore.Position, error)
	// Save stores pos as the checkpoint of name. Saving a position that is
	// not after the stored one is a no-op, not an error: checkpoints never
	// move backwards.
	Save(ctx context.Context, name string, pos eventstore.Position) error
}
