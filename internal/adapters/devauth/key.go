package devauth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/record"
)

// KeyStream is the stream holding the token signing key: one event,
// appended with "no stream" by the first node to start.
const KeyStream = "secret-device-tokens"

// KeyCreatedType is the event type of the signing key.
const KeyCreatedType = "DeviceTokenKeyCreated.v1"

// keyLen is the length of generated keys, in bytes.
const keyLen = 32

// KeyCreated records the device token signing key. It lives in the log like
// everything else, so whoever can read the event store can forge device
// tokens: protect the store as the secret it holds.
type KeyCreated struct {
	Key []byte `json:"key"` // base64 in JSON
}

// EventType implements domain.Event.
func (KeyCreated) EventType() string { return KeyCreatedType }

// RegisterEvents registers the package's event with r, next to the
// domain's; call it once at start-up.
func RegisterEvents(r *domain.Registry) {
	r.Register(KeyCreatedType, func() domain.Event { return new(KeyCreated) })
}

// LoadKey returns the signing key shared by every node on store, creating
// it on the first start: a fresh random key appended to KeyStream with
// "no stream". When another node got there first (ErrWrongExpectedRevision)
// its key is read back, so all nodes sign alike. reg must hold the event
// (RegisterEvents).
//
// A server store may refuse the append because of the other node's append
// before that append is readable (the EventStoreDB double decides appends
// before their fsync and serves reads only from what is on disk), so the
// read back is retried for up to keyVisibleWithin.
func LoadKey(ctx context.Context, store eventstore.Store, reg *domain.Registry, now time.Time) ([]byte, error) {
	key, err := readKey(ctx, store, reg)
	if !errors.Is(err, eventstore.ErrStreamNotFound) {
		return key, err
	}
	key = make([]byte, keyLen)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("devauth: generate key: %w", err)
	}
	err = appendKey(ctx, store, reg, key, now)
	switch {
	case err == nil:
		return key, nil
	case errors.Is(err, eventstore.ErrWrongExpectedRevision):
		return readWinningKey(ctx, store, reg)
	}
	return nil, fmt.Errorf("devauth: store key: %w", err)
}

// keyVisibleWithin bounds how long LoadKey waits for another node's key to
// become readable after its append won.
const keyVisibleWithin = 5 * time.Second

// readWinningKey reads the key another node's append stored, waiting
// while the stream still reads as missing.
func readWinningKey(ctx context.Context, store eventstore.Store, reg *domain.Registry) ([]byte, error) {
	deadline := time.Now().Add(keyVisibleWithin)
	for pause := time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		key, err := readKey(ctx, store, reg)
		if !errors.Is(err, eventstore.ErrStreamNotFound) || time.Now().After(deadline) {
			return key, err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("devauth: read key: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// appendKey appends key as the first event of KeyStream ("no stream").
func appendKey(ctx context.Context, store eventstore.Store, reg *domain.Registry, key []byte, now time.Time) error {
	meta := domain.Metadata{OccurredAt: now, Actor: domain.SystemActor(), RequestID: "device-token-key"}
	_, err := record.Log{Store: store, Registry: reg}.Record(ctx, KeyStream, eventstore.NoStream, []domain.Event{KeyCreated{Key: key}}, meta, record.Random())
	return err
}

// readKey reads the key from the first event of KeyStream; it returns
// ErrStreamNotFound (wrapped) when there is none yet.
func readKey(ctx context.Context, store eventstore.Store, reg *domain.Registry) ([]byte, error) {
	e, first, found, err := record.First(ctx, record.Log{Store: store, Registry: reg}, KeyStream)
	var undecodable *record.DecodeError
	switch {
	case errors.As(err, &undecodable):
		return nil, fmt.Errorf("devauth: decode key: %w", err)
	case err != nil:
		return nil, fmt.Errorf("devauth: read key: %w", err)
	case !found:
		return nil, fmt.Errorf("devauth: read key: %w", eventstore.ErrStreamNotFound)
	}
	k, ok := e.(KeyCreated)
	if !ok || len(k.Key) < MinKeyLen {
		return nil, fmt.Errorf("devauth: %s holds no usable key (%s)", KeyStream, first.Type)
	}
	return k.Key, nil
}
