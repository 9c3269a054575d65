package httpapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/httpapi/wire"
	"tvsm/internal/app"
)

// Error codes: the "error" member of an error body. Clients switch on them,
// so they never change once released.
const (
	CodeBadRequest       = "bad_request"
	CodeValidationFailed = "validation_failed"
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeNotFound         = "not_found"
	CodeConflict         = "conflict"
	CodeBodyTooLarge     = "body_too_large"
	CodeUnsupportedMedia = "unsupported_media_type"
	CodeNotReady         = "not_ready"
	CodeUnavailable      = "unavailable"
	CodeInternal         = "internal"
	// CodeClientClosed: the client went away before the answer (nginx's
	// 499); nobody reads it, but the log and the metrics then tell a
	// client's disconnect from a failure of ours.
	CodeClientClosed = "client_closed_request"
	// CodeIdempotencyMismatch: an Idempotency-Key reused with another body.
	CodeIdempotencyMismatch = "idempotency_key_mismatch"
)

// Error is an API error: an HTTP status and the JSON body every API answers
// errors with:
//
//	{"statusCode":400,"cause":"login: required","error":"validation_failed","fields":{"login":"required"}}
type Error struct {
	Status int               `json:"statusCode"`
	Cause  string            `json:"cause"`
	Code   string            `json:"error"`
	Fields map[string]string `json:"fields,omitempty"`
	// Err is the underlying error: logged, never sent.
	Err error `json:"-"`
	// RetryAfter, when positive, is sent as the Retry-After header (whole
	// seconds).
	RetryAfter int64 `json:"-"`
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Cause, e.Err)
	}
	return e.Code + ": " + e.Cause
}

func (e *Error) Unwrap() error { return e.Err }

// ValidationFailed is a 400 naming each bad field; the cause lists them all
// ("login: required; provider: unknown").
func ValidationFailed(fields map[string]string) *Error {
	causes := make([]string, 0, len(fields))
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		causes = append(causes, name+": "+fields[name])
	}
	return &Error{Status: http.StatusBadRequest, Code: CodeValidationFailed, Cause: strings.Join(causes, "; "), Fields: fields}
}

// BadRequest is a 400 for input that is not even well-formed (bad JSON, bad
// query parameter syntax).
func BadRequest(cause string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: CodeBadRequest, Cause: cause}
}

// Unauthorized is a 401: no credentials or wrong ones.
func Unauthorized(cause string) *Error {
	return &Error{Status: http.StatusUnauthorized, Code: CodeUnauthorized, Cause: cause}
}

// Forbidden is a 403: valid credentials, but outside their scope.
func Forbidden(cause string) *Error {
	return &Error{Status: http.StatusForbidden, Code: CodeForbidden, Cause: cause}
}

// NotFound is a 404 for an unknown id or route.
func NotFound(cause string) *Error {
	return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Cause: cause}
}

// Conflict is a 409: a concurrent modification that retries did not resolve.
func Conflict(cause string) *Error {
	return &Error{Status: http.StatusConflict, Code: CodeConflict, Cause: cause}
}

// BodyTooLarge is a 413: the request body exceeds limit bytes.
func BodyTooLarge(limit int64) *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeBodyTooLarge,
		Cause: fmt.Sprintf("request body exceeds the limit of %d bytes", limit)}
}

// UnsupportedMediaType is a 415: a request whose Content-Type, contentType
// ("" when it has none), is none of the accepted media types
// (application/json when none are given).
func UnsupportedMediaType(contentType string, accepted ...string) *Error {
	if len(accepted) == 0 {
		accepted = []string{"application/json"}
	}
	want := strings.Join(accepted, " or ")
	cause := fmt.Sprintf("Content-Type %q is not supported; send %s", contentType, want)
	if strings.TrimSpace(contentType) == "" {
		cause = "Content-Type header missing; send " + want
	}
	return &Error{Status: http.StatusUnsupportedMediaType, Code: CodeUnsupportedMedia, Cause: cause}
}

// Unavailable is a 503: the node cannot answer now, the client may retry.
func Unavailable(cause string) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Cause: cause}
}

// Internal is a 500 for err. The body says only that something failed
// internally; err is logged with the request.
func Internal(err error) *Error {
	return &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Cause: "internal error", Err: err}
}

// AsError maps any error to the API error it is answered with. This is the one
// place where errors of the layers below meet HTTP status codes.
func AsError(err error) *Error {
	var (
		apiErr     *Error
		fieldErrs  wire.FieldErrors
		bodyErr    *wire.BodyError
		tooLarge   *wire.TooLargeError
		maxBytes   *http.MaxBytesError
		validation *domain.ValidationError
		taken      *app.TakenError
		inProgress *app.InProgressError
	)
	switch {
	case errors.As(err, &apiErr):
		return apiErr
	case errors.As(err, &fieldErrs):
		return ValidationFailed(fieldErrs)
	case errors.As(err, &bodyErr):
		return BadRequest(bodyErr.Error())
	case errors.As(err, &tooLarge):
		return BodyTooLarge(tooLarge.Limit)
	case errors.As(err, &maxBytes):
		return BodyTooLarge(maxBytes.Limit)
	case errors.As(err, &validation):
		e := ValidationFailed(validation.Fields)
		e.Err = err
		return e
	case errors.As(err, &taken):
		return wrapped(BadRequest(err.Error()), err)
	case errors.Is(err, domain.ErrNotFound):
		return wrapped(NotFound(err.Error()), err)
	case errors.Is(err, domain.ErrAlreadyExists), errors.Is(err, domain.ErrStillSubscribed):
		return wrapped(Conflict(err.Error()), err)
	case errors.Is(err, domain.ErrDeviceLimit):
		e := Forbidden(err.Error())
		e.Code = CodeDeviceLimit
		return wrapped(e, err)
	case errors.Is(err, app.ErrForbidden):
		return wrapped(Forbidden(err.Error()), err)
	case errors.As(err, &inProgress):
		// The cause is ours: the error names the key's internal stream.
		e := Conflict(fmt.Sprintf("a request with this Idempotency-Key is in progress; retry in %d s", retryAfterSeconds(inProgress.Wait)))
		e.RetryAfter = retryAfterSeconds(inProgress.Wait)
		return wrapped(e, err)
	case errors.Is(err, app.ErrIdempotencyInProgress):
		return wrapped(Conflict("a request with this Idempotency-Key is in progress; retry later"), err)
	case errors.Is(err, app.ErrIDNotImported):
		return wrapped(Conflict(err.Error()+"; reserve it first: POST /api/admin/import/ids"), err)
	case errors.Is(err, app.ErrConflict), errors.Is(err, app.ErrInUse):
		return wrapped(Conflict(err.Error()), err)
	case errors.Is(err, app.ErrIdempotencyMismatch):
		return wrapped(&Error{Status: http.StatusUnprocessableEntity, Code: CodeIdempotencyMismatch,
			Cause: "this Idempotency-Key was used with another request body; send a new key for a new request"}, err)
	case errors.Is(err, app.ErrInvalidIdempotencyKey):
		// The header's problem alone: no record stream, no layer.
		problem := strings.TrimPrefix(err.Error(), app.ErrInvalidIdempotencyKey.Error()+": ")
		return wrapped(BadRequest(IdempotencyKeyHeader+": "+problem), err)
	case errors.Is(err, ErrPasswordChecksBusy):
		return wrapped(Unavailable(err.Error()+"; retry in 1 s"), err)
	case errors.Is(err, app.ErrReadModelLag):
		return wrapped(Unavailable(err.Error()), err)
	case errors.Is(err, eventstore.ErrWrongExpectedRevision):
		e := Conflict("concurrent modification; retry the request")
		e.Err = err
		return e
	case errors.Is(err, eventstore.ErrUnavailable):
		// The event store cannot be reached: a write's outcome is unknown,
		// and a retry (with its Idempotency-Key, or of an update, which
		// is idempotent) is safe once the store is back.
		return wrapped(Unavailable("event store unavailable; retry the request"), err)
	case errors.Is(err, eventstore.ErrStreamNotFound):
		e := NotFound("not found")
		e.Err = err
		return e
	case errors.Is(err, context.DeadlineExceeded):
		e := Unavailable("timed out; retry the request")
		e.Err = err
		return e
	case errors.Is(err, context.Canceled):
		return clientClosed(err)
	}
	return Internal(err)
}

// StatusClientClosedRequest is the status of an answer to a client that
// closed its request before it (nginx's convention; not a standard code).
const StatusClientClosedRequest = 499

// clientClosed is the answer to a request its client gave up (seen only in
// the request log and the metrics).
func clientClosed(err error) *Error {
	return &Error{Status: StatusClientClosedRequest, Code: CodeClientClosed, Cause: "the client closed the request", Err: err}
}

// wrapped attaches the cause to an API error, for the request log.
func wrapped(e *Error, err error) *Error {
	e.Err = err
	return e
}

// WriteError answers the request with err (mapped by AsError) and stops the
// handler chain. The error is attached to the context so the request log
// records it.
func WriteError(c *gin.Context, err error) {
	if err == nil {
		err = errors.New("httpapi: WriteError called with a nil error")
	}
	e := AsError(err)
	if e.Code == CodeValidationFailed && len(e.Fields) > 0 {
		e = withMisspelledKeys(c, e)
	}
	_ = c.Error(err)
	if e.Status >= http.StatusInternalServerError && e.Code == CodeInternal {
		// Give the caller a handle on the log line without exposing internals.
		copied := *e
		copied.Cause = "internal error (request id " + RequestID(c.Request.Context()) + ")"
		e = &copied
	}
	if e.RetryAfter > 0 {
		c.Header("Retry-After", strconv.FormatInt(e.RetryAfter, 10))
	}
	c.AbortWithStatusJSON(e.Status, e)
}
