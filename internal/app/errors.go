package app

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Errors of the application layer. They are returned wrapped (in an *OpError
// or with fmt.Errorf %w); test for them with errors.Is. The HTTP layer maps
// them to status codes in one place; the intended mapping is given with each.
var (
	// ErrConflict: the stream kept changing under the command and the retry
	// budget ran out (optimistic concurrency lost every time). HTTP 409.
	ErrConflict = errors.New("app: concurrent modification")
	// ErrIdempotencyMismatch: an Idempotency-Key was reused with a different
	// request body (or another scope's key collided, which SHA-256 makes
	// impossible in practice). HTTP 422, as the IETF Idempotency-Key draft
	// (draft-ietf-httpapi-idempotency-key-header) prescribes.
	ErrIdempotencyMismatch = errors.New("app: idempotency key reused with a different request")
	// ErrIdempotencyInProgress: the first request with this key is still
	// being processed (its lease has not expired). HTTP 409; the client
	// retries later and then gets the recorded response.
	ErrIdempotencyInProgress = errors.New("app: request with this idempotency key is in progress")
	// ErrInvalidIdempotencyKey: the key is empty, too long or not printable
	// ASCII. HTTP 400.
	ErrInvalidIdempotencyKey = errors.New("app: invalid idempotency key")
	// ErrTaken: a unique name (login) is reserved by another, live owner.
	// HTTP 400: a duplicate login is bad input, not a conflict.
	ErrTaken = errors.New("app: already taken")
	// ErrReadModelLag: the read model did not reach a write's position within
	// the bounded wait. The write itself succeeded. HTTP 503.
	ErrReadModelLag = errors.New("app: read model lagging")
	// ErrInUse: a delete of an object others still refer to (a tariff tag
	// that tariffs name, a region that providers name). HTTP 409; the error
	// is an *InUseError naming them.
	ErrInUse = errors.New("app: in use")
	// ErrIDNotImported: an import asked to create an object under an id
	// that is not reserved for import (IDAllocator.ReserveImport), so an
	// allocator may hand it out. HTTP 409.
	ErrIDNotImported = errors.New("app: id not reserved for import")
)

// InProgressError is ErrIdempotencyInProgress with when the attempt that
// holds the key lets go of it, unless it renews its lease or records its
// response before.
type InProgressError struct {
	Attempt int
	Until   time.Time
	// Wait is Until less the time of the refusal, by the executor's clock.
	Wait time.Duration
}

// Error implements error.
func (e *InProgressError) Error() string {
	return fmt.Sprintf("%v (attempt %d holds it until %s)", ErrIdempotencyInProgress, e.Attempt, e.Until.Format(time.RFC3339Nano))
}

// Unwrap returns ErrIdempotencyInProgress.
func (e *InProgressError) Unwrap() error { return ErrIdempotencyInProgress }

// errLeaseLost ends an idempotent attempt's work whose lease could not be
// renewed (the store did not answer in time, or another attempt took the
// key over). It is a timeout: the client retries.
var errLeaseLost = fmt.Errorf("app: idempotency lease not renewed in time: %w", context.DeadlineExceeded)

// OpError is the error of an application-layer operation: it names the
// operation ("execute", "decide", "append", "load", "reserve", "allocate",
// "idempotent", ...) and the stream it concerned, in the manner of
// eventhorizon's EventStoreError{Op, AggregateID, Err}. Domain errors returned
// by a decide function come back wrapped in an OpError with Op "decide";
// errors.Is and errors.As see through it.
type OpError struct {
	Op     string
	Stream string
	Err    error
}

// Error implements error.
func (e *OpError) Error() string {
	return fmt.Sprintf("app: %s %s: %v", e.Op, e.Stream, e.Err)
}

// Unwrap returns the underlying error.
func (e *OpError) Unwrap() error { return e.Err }

func opError(op, stream string, err error) error {
	return &OpError{Op: op, Stream: stream, Err: err}
}

// TakenError is returned by Reserve when the name is held by another owner.
// It matches ErrTaken with errors.Is.
type TakenError struct {
	// Holder is the owner currently holding the reservation.
	Holder string
}

// Error implements error.
func (e *TakenError) Error() string { return fmt.Sprintf("app: already taken by %s", e.Holder) }

// Unwrap returns ErrTaken.
func (e *TakenError) Unwrap() error { return ErrTaken }

// InUseError refuses the delete of object What ID because the objects of
// kind By (IDs) still refer to it. It matches ErrInUse with errors.Is.
type InUseError struct {
	What string  // "tarif_tag"
	ID   int64   // its id
	By   string  // "tariff"
	IDs  []int64 // the ids of those that refer to it, ascending
}

// Error implements error: "tarif_tag 3 is in use by tariffs 4, 5: change
// them first".
func (e *InUseError) Error() string {
	ids := make([]string, len(e.IDs))
	for i, id := range e.IDs {
		ids[i] = strconv.FormatInt(id, 10)
	}
	by, them := e.By, "it"
	if len(ids) > 1 {
		by, them = by+"s", "them"
	}
	return fmt.Sprintf("%s %d is in use by %s %s: change %s first", e.What, e.ID, by, strings.Join(ids, ", "), them)
}

// Unwrap returns ErrInUse.
func (e *InUseError) Unwrap() error { return ErrInUse }
