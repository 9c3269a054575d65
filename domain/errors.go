package domain

import "errors"

// Sentinel errors of the event registry. They are returned wrapped in an
// *EventError; test for them with errors.Is.
var (
	// ErrInvalidEventType reports an event type name that does not match
	// AggregateVerbed.vN (see ValidateEventType).
	ErrInvalidEventType = errors.New("invalid event type name")
	// ErrDuplicateEventType reports a second registration of one name.
	ErrDuplicateEventType = errors.New("event type already registered")
	// ErrEventTypeMismatch reports an event whose EventType method or Go
	// type disagrees with the name it is registered or encoded under.
	ErrEventTypeMismatch = errors.New("event type mismatch")
	// ErrInvalidEventFactory reports a factory that does not return a fresh
	// struct event (see Registry.Add).
	ErrInvalidEventFactory = errors.New("invalid event factory")
	// ErrUnknownEventType reports a name with no registration and no
	// upcaster.
	ErrUnknownEventType = errors.New("unknown event type")
	// ErrInvalidEventData reports stored event data that is not a JSON
	// object or does not decode into the registered type.
	ErrInvalidEventData = errors.New("invalid event data")
	// ErrInvalidUpcaster reports a bad upcaster registration: invalid or
	// equal names, a duplicate source, a cycle, or a source that is itself
	// a registered event type.
	ErrInvalidUpcaster = errors.New("invalid upcaster")
)

// EventError is the error of a registry operation. It names the operation
// ("register", "encode", "decode" or "upcast") and the event type.
type EventError struct {
	Op        string
	EventType string
	Err       error
}

// Error implements error.
func (e *EventError) Error() string {
	name := e.EventType
	if name == "" {
		name = `""`
	}
	return "domain: " + e.Op + " " + name + ": " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *EventError) Unwrap() error { return e.Err }

// Sentinel errors of the aggregates' decide functions. They come wrapped
// (with the aggregate and id, or as a *ValidationError or *DeviceLimitError);
// test for them with errors.Is. The HTTP layer maps them to status codes in
// one place: ErrValidation and ErrDeviceLimit to 400/403, ErrNotFound to 404,
// ErrAlreadyExists to 409.
var (
	// ErrNotFound reports a command on an aggregate (or a subscription or
	// device inside one) that does not exist or was deleted.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists reports a create for an id (or login) that is taken,
	// including by a deleted aggregate: ids are never reused.
	ErrAlreadyExists = errors.New("already exists")
	// ErrValidation reports a command with invalid fields; the error is a
	// *ValidationError naming each field.
	ErrValidation = errors.New("validation failed")
	// ErrDeviceLimit reports a device bind refused because the account has
	// as many devices as its limit allows; the error is a *DeviceLimitError.
	ErrDeviceLimit = errors.New("device limit reached")
	// ErrStillSubscribed reports an erasure refused because the account
	// has a subscription that has not ended (EraseAccount.Force overrides).
	ErrStillSubscribed = errors.New("account still subscribed")
)
