// Package service carries out the use cases of the Provider and Admin APIs:
// it turns a caller's request into domain commands run through internal/app
// (ids, reservations, idempotency, retries), answers reads from the read
// model, and makes every write visible to the caller's next read before it
// returns (read-your-writes). HTTP handlers call it through small interfaces
// of their own; it knows nothing of HTTP.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/record"
	"tvsm/internal/adapters/devauth"
	"tvsm/internal/app"
	"tvsm/projections/readmodel"
)

// ErrForbidden: the caller's provider scope does not cover the data.
var ErrForbidden = errors.New("outside the admin's provider scope")

// Config holds the dependencies of a Service.
type Config struct {
	Executor *app.Executor
	Model    *readmodel.Model
	// Applied is the read model's applied position (its runner's Progress).
	Applied app.ProgressWaiter
	// Store is read directly for account history and the change feed.
	Store    eventstore.Store
	Registry *domain.Registry
	// ReadYourWritesTimeout bounds the wait for the read model after a write
	// (default 5s); past it the write is done but the call fails with
	// app.ErrReadModelLag (503).
	ReadYourWritesTimeout time.Duration
	// BcryptCost hashes admin passwords (default 10).
	BcryptCost int
	Logger     *slog.Logger
	// Clock is the time of reads that depend on it (services available now);
	// default time.Now. Give it the executor's clock.
	Clock func() time.Time
	// DeviceTokens signs and verifies device tokens (Device API); the
	// device methods fail without it.
	DeviceTokens *devauth.Signer
}

// Service is safe for concurrent use.
type Service struct {
	cfg Config
	log *slog.Logger
	rec record.Log // cfg.Store and cfg.Registry, for events no command decides
}

// New returns a Service over cfg.
func New(cfg Config) (*Service, error) {
	if cfg.Executor == nil || cfg.Model == nil || cfg.Applied == nil || cfg.Store == nil || cfg.Registry == nil {
		return nil, errors.New("service: Executor, Model, Applied, Store and Registry are required")
	}
	if cfg.ReadYourWritesTimeout <= 0 {
		cfg.ReadYourWritesTimeout = 5 * time.Second
	}
	if cfg.BcryptCost <= 0 {
		cfg.BcryptCost = 10
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	return &Service{cfg: cfg, log: cfg.Logger, rec: record.Log{Store: cfg.Store, Registry: cfg.Registry}}, nil
}

// Caller is who makes a request and how: the admin (and its provider scope),
// the request id, and the Idempotency-Key if the client sent one.
type Caller struct {
	Admin string
	// Scope is the provider a provider-scoped admin may touch; nil for a
	// superadmin.
	Scope          *int64
	RequestID      string
	IdempotencyKey string
}

// meta is the metadata of the events the caller's commands append.
func (c Caller) meta() app.RequestMeta {
	return app.RequestMeta{Actor: domain.AdminActor(c.Admin), RequestID: c.RequestID}
}

// allows reports whether the caller may see and change provider's data.
func (c Caller) allows(provider int64) bool { return c.Scope == nil || *c.Scope == provider }

// checkScope returns ErrForbidden, naming the provider, when the caller may
// not touch provider's data.
func (c Caller) checkScope(provider int64) error {
	if c.allows(provider) {
		return nil
	}
	return fmt.Errorf("provider %d: %w", provider, ErrForbidden)
}

// superadmin returns ErrForbidden unless the caller is a superadmin.
func (c Caller) superadmin() error {
	if c.Scope == nil {
		return nil
	}
	return fmt.Errorf("superadmin only: %w", ErrForbidden)
}

// now is the service's time, in UTC.
func (s *Service) now() time.Time { return s.cfg.Clock().UTC() }

// BodyEncoder renders the answer to a create: the bytes are the response body,
// recorded under the request's Idempotency-Key and replayed to its retries.
type BodyEncoder[T any] func(T) ([]byte, error)

// written waits until the read model has applied pos, so that the caller's
// next read sees its write.
func (s *Service) written(ctx context.Context, pos eventstore.Position) error {
	if pos.IsZero() {
		return nil
	}
	return app.WaitApplied(ctx, s.cfg.Applied, pos, s.cfg.ReadYourWritesTimeout)
}
