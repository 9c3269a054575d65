package app

import (
	"errors"
	"fmt"

	"tvsm/domain"
)

// ErrForbidden: the caller's provider scope does not cover the data. HTTP 403.
var ErrForbidden = errors.New("outside the admin's provider scope")

// Caller is who makes a request of the Provider or Admin API and how: the
// admin (and its provider scope), the request id, and the Idempotency-Key
// if the client sent one. Commands and queries check the scope themselves.
type Caller struct {
	Admin string
	// System marks work the node does by itself (retention): its events
	// are the system actor's.
	System bool
	// Scope is the provider a provider-scoped admin may touch; nil for a
	// superadmin.
	Scope          *int64
	RequestID      string
	IdempotencyKey string
}

// Meta is the metadata of the events the caller's commands append.
func (c Caller) Meta() RequestMeta {
	if c.System {
		return RequestMeta{Actor: domain.SystemActor(), RequestID: c.RequestID}
	}
	return RequestMeta{Actor: domain.AdminActor(c.Admin), RequestID: c.RequestID}
}

// Allows reports whether the caller may see and change provider's data.
func (c Caller) Allows(provider int64) bool { return c.Scope == nil || *c.Scope == provider }

// CheckScope returns ErrForbidden, naming the provider, when the caller may
// not touch provider's data.
func (c Caller) CheckScope(provider int64) error {
	if c.Allows(provider) {
		return nil
	}
	return fmt.Errorf("provider %d: %w", provider, ErrForbidden)
}

// RequireSuperadmin returns ErrForbidden unless the caller is a superadmin.
func (c Caller) RequireSuperadmin() error {
	if c.Scope == nil {
		return nil
	}
	return fmt.Errorf("superadmin only: %w", ErrForbidden)
}
