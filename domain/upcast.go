package domain

import (
	"fmt"
	"maps"
	"slices"
)

// upcaster rewrites stored data of one event type into the JSON of another.
type upcaster struct {
	to string
	fn func([]byte) ([]byte, error)
}

// RegisterUpcaster is AddUpcaster that panics on error.
func (r *Registry) RegisterUpcaster(from, to string, fn func([]byte) ([]byte, error)) {
	if err := r.AddUpcaster(from, to, fn); err != nil {
		panic(err)
	}
}

// AddUpcaster lets Decode read stored events of type from (typically X.v1,
// whose Go type no longer exists) as type to (X.v2): fn receives the stored
// JSON object and returns the JSON object of to. fn must be pure and must
// not modify its input. Upcasters chain: X.v1→X.v2 and X.v2→X.v3 make X.v1
// decode as X.v3 when X.v3 is the registered type.
//
// AddUpcaster fails, with an *EventError wrapping ErrInvalidEventType or
// ErrInvalidUpcaster, for invalid names, from == to, a nil fn, a second
// upcaster from the same type, a from that is a registered event type, or a
// registration that would close a cycle. Whether the chain ends at a
// registered type is checked by Validate and at Decode time, so
// registration order does not matter.
func (r *Registry) AddUpcaster(from, to string, fn func([]byte) ([]byte, error)) error {
	fail := func(err error) error { return &EventError{Op: "register upcaster", EventType: from, Err: err} }
	if err := ValidateEventType(from); err != nil {
		return fail(err)
	}
	if err := ValidateEventType(to); err != nil {
		return fail(err)
	}
	if from == to {
		return fail(fmt.Errorf("%w: upcast to itself", ErrInvalidUpcaster))
	}
	if fn == nil {
		return fail(fmt.Errorf("%w: nil function", ErrInvalidUpcaster))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.events[from]; ok {
		return fail(fmt.Errorf("%w: %s is a registered event type", ErrInvalidUpcaster, from))
	}
	if up, ok := r.upcasters[from]; ok {
		return fail(fmt.Errorf("%w: already upcast to %s", ErrInvalidUpcaster, up.to))
	}
	for cur := to; ; {
		if cur == from {
			return fail(fmt.Errorf("%w: %s → %s closes a cycle", ErrInvalidUpcaster, from, to))
		}
		up, ok := r.upcasters[cur]
		if !ok {
			break
		}
		cur = up.to
	}
	r.upcasters[from] = upcaster{to: to, fn: fn}
	return nil
}

// Validate checks that every upcaster chain ends at a registered event type.
// Call it after all registrations (a test of the wiring is a good place).
func (r *Registry) Validate() error {
	r.mu.RLock()
	sources := slices.Sorted(maps.Keys(r.upcasters))
	r.mu.RUnlock()
	for _, from := range sources {
		if _, _, err := r.resolve(from); err != nil {
			return err
		}
	}
	return nil
}
