package projections

import (
	"context"

	"tvsm/eventstore"
)

// SnapshotCheckpoints is the CheckpointStore of an in-memory read model that
// persists itself only through snapshots. Its state and its position are
// saved together, by WriteSnapshot, never separately (saving a checkpoint
// apart from the state it describes is how "skipped events after a crash"
// bugs start). So Load returns the position of the snapshot the model was
// restored from, and Save does nothing.
//
// Start-up:
//
//	m := readmodel.New()
//	pos, err := projections.ReadSnapshot(path, m.Restore)
//	if errors.Is(err, fs.ErrNotExist) { // first start: empty model, whole log
//		pos, err = eventstore.Beginning, nil
//	} else if errors.Is(err, projections.ErrCorruptSnapshot) {
//		// log it, start from an empty model and the whole log
//	}
//	r := projections.NewRunner(store, reg, m, projections.SnapshotCheckpoints{Position: pos}, opts)
//
// Taking a snapshot (periodically, and on shutdown):
//
//	m.mu.RLock() // blocks Apply, so the state does not change meanwhile
//	pos := r.Progress().Position()
//	err := projections.WriteSnapshot(path, pos, m.encodeLocked)
//	m.mu.RUnlock()
//
// The Runner advances Progress only after Apply returns, so the state read
// under the model's lock includes everything up to pos (possibly a little
// more, which the idempotent Apply absorbs when the tail is replayed).
type SnapshotCheckpoints struct {
	// Position is where the restored snapshot was taken
	// (eventstore.Beginning without one).
	Position eventstore.Position
}

// Load returns c.Position for any name.
func (c SnapshotCheckpoints) Load(ctx context.Context, name string) (eventstore.Position, error) {
	return c.Position, nil
}

// Save does nothing: the position is saved with the state, by WriteSnapshot.
func (c SnapshotCheckpoints) Save(ctx context.Context, name string, pos eventstore.Position) error {
	return nil
}
