package sealed

import (
	"context"
	"errors"
)

// Errors of a KeyStore.
var (
	// ErrNoKey: the subject has no key (it never wrote personal data).
	ErrNoKey = errors.New("sealed: subject has no key")
	// ErrErased: the subject's key was erased; its personal data can no
	// longer be read, and none can be written.
	ErrErased = errors.New("sealed: subject erased")
)

// WrappedKey is a subject's key as a KeyStore keeps it: encrypted by the
// master key whose fingerprint it names.
type WrappedKey struct {
	Master [4]byte
	Data   []byte // wrappedLen bytes
}

// KeyStore keeps one key per data subject (an account) apart from the
// append-only log, where it can be destroyed: destroying it makes every
// value sealed under it unreadable, wherever copies of the log went.
// Every method is safe for concurrent use.
type KeyStore interface {
	// Load returns subject's key, ErrNoKey or ErrErased.
	Load(ctx context.Context, subject int64) (WrappedKey, error)
	// Create stores k as subject's key unless it has one, and returns the
	// key it then has; durable on return. ErrErased if it was erased.
	Create(ctx context.Context, subject int64, k WrappedKey) (WrappedKey, error)
	// Erase destroys subject's key for good, durably, and remembers that
	// the subject was erased. Erasing again, or a subject without a key,
	// succeeds.
	Erase(ctx context.Context, subject int64) error
	// Rewrap replaces the key of every subject wrapped under from.Master by
	// the same key wrapped under to (rotation of the master key).
	Rewrap(ctx context.Context, from, to *MasterKey) (int, error)
	Close() error
}
