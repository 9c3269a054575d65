package sealed

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"tvsm/eventstore"
	"tvsm/internal/platform/schedule"
)

// StreamKeys keeps each subject's key in a stream of its own,
// "subjectkey-{id}", of an event store every node shares (EventStoreDB):
// all nodes read the same keys. Erasing tombstones the stream. On
// EventStoreDB the tombstoned key stays in the database's chunk files
// until the operator's next scavenge, so erasure is complete only after
// one (the operations guide says how to schedule it).
type StreamKeys struct {
	store eventstore.Store
	tomb  eventstore.Tombstoner
}

// KeyStreamPrefix starts the names of the subjects' key streams.
const KeyStreamPrefix = "subjectkey-"

// SubjectKeyCreatedType is the event of a key stream. No projection reads
// it: it is registered nowhere.
const SubjectKeyCreatedType = "SubjectKeyCreated.v1"

type keyEvent struct {
	Master string `json:"master"` // hex fingerprint
	Key    []byte `json:"key"`    // the wrapped key
}

// NewStreamKeys returns the key store in store's streams; store must be
// able to tombstone a stream.
func NewStreamKeys(store eventstore.Store) (*StreamKeys, error) {
	tomb, ok := store.(eventstore.Tombstoner)
	if !ok {
		return nil, errors.New("sealed: the event store cannot tombstone a stream, so it cannot hold erasable keys")
	}
	return &StreamKeys{store: store, tomb: tomb}, nil
}

func keyStream(subject int64) string { return KeyStreamPrefix + strconv.FormatInt(subject, 10) }

// Load implements KeyStore.
func (s *StreamKeys) Load(ctx context.Context, subject int64) (WrappedKey, error) {
	recs, err := s.store.ReadStream(ctx, keyStream(subject), eventstore.Start, 1)
	switch {
	case errors.Is(err, eventstore.ErrStreamDeleted):
		return WrappedKey{}, ErrErased
	case errors.Is(err, eventstore.ErrStreamNotFound) || err == nil && len(recs) == 0:
		return WrappedKey{}, ErrNoKey
	case err != nil:
		return WrappedKey{}, err
	}
	var e keyEvent
	if err := json.Unmarshal(recs[0].Data, &e); err != nil {
		return WrappedKey{}, fmt.Errorf("sealed: key of subject %d: %w", subject, err)
	}
	var k WrappedKey
	if fp, err := hex.DecodeString(e.Master); err != nil || len(fp) != len(k.Master) {
		return WrappedKey{}, fmt.Errorf("sealed: key of subject %d: bad master fingerprint", subject)
	}
	_, _ = hex.Decode(k.Master[:], []byte(e.Master))
	k.Data = e.Key
	return k, nil
}

// Create implements KeyStore: the first create of a subject wins, on any
// node. A loser may learn of the winner's append before it is readable
// (the server checks expectations against writes still in flight), so it
// reads again for a while, and creates again if the winner's write failed.
func (s *StreamKeys) Create(ctx context.Context, subject int64, k WrappedKey) (WrappedKey, error) {
	data, err := json.Marshal(keyEvent{Master: hex.EncodeToString(k.Master[:]), Key: k.Data})
	if err != nil {
		return WrappedKey{}, err
	}
	e := eventstore.EventData{ID: eventstore.NewEventID(), Type: SubjectKeyCreatedType, Data: data, Metadata: []byte(`{}`)}
	for attempt := 1; ; attempt++ {
		_, err = s.store.Append(ctx, keyStream(subject), eventstore.NoStream, e)
		switch {
		case err == nil:
			return k, nil
		case errors.Is(err, eventstore.ErrStreamDeleted):
			return WrappedKey{}, ErrErased
		case !errors.Is(err, eventstore.ErrWrongExpectedRevision):
			return WrappedKey{}, err
		}
		for range 20 {
			w, err := s.Load(ctx, subject)
			if !errors.Is(err, ErrNoKey) {
				return w, err
			}
			if !schedule.Sleep(ctx, 5*time.Millisecond) {
				return WrappedKey{}, ctx.Err()
			}
		}
		if attempt == 5 {
			return WrappedKey{}, fmt.Errorf("sealed: the key stream of subject %d exists but cannot be read", subject)
		}
	}
}

// Erase implements KeyStore.
func (s *StreamKeys) Erase(ctx context.Context, subject int64) error {
	return s.tomb.Tombstone(ctx, keyStream(subject))
}

// Rewrap implements KeyStore. A key stream keeps every wrap appended to
// it, so rewrapping there would leave the old master key able to open
// the old wraps: rotation on a shared store is not offered.
func (s *StreamKeys) Rewrap(context.Context, *MasterKey, *MasterKey) (int, error) {
	return 0, errors.New("sealed: rotating the master key of keys kept in EventStoreDB streams is not supported")
}

// Close implements KeyStore; the event store is the caller's.
func (s *StreamKeys) Close() error { return nil }
