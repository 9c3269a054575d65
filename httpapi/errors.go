package httpapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"tvsm/eventstore"
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
	CodeNotReady         = "not_ready"
	CodeUnavailable      = "unavailable"
	CodeInternal         = "internal"
)

// Error is an API error: an HTTP status and the JSON body every API answers
// errors with (DESIGN.md §3):
//
//	{"statusCode":400,"cause":"login: required","error":"validation_failed","fields":{"login":"required"}}
type Error struct {
	Status int               `json:"statusCode"`
	Cause  string            `json:"cause"`
	Code   string            `json:"error"`
	Fields map[string]string `json:"fields,omitempty"`
	// Err is the underlying error: logged, never sent.
	Err error `json:"-"`
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
	var apiErr *Error
	switch {
	case errors.As(err, &apiErr):
		return apiErr
	case errors.Is(err, eventstore.ErrWrongExpectedRevision):
		e := Conflict("concurrent modification; retry the request")
		e.Err = err
		return e
	case errors.Is(err, eventstore.ErrStreamNotFound):
		e := NotFound("not found")
		e.Err = err
		return e
	case errors.Is(err, context.DeadlineExceeded):
		e := Unavailable("timed out; retry the request")
		e.Err = err
		return e
	}
	return Internal(err)
}

// WriteError answers the request with err (mapped by AsError) and stops the
// handler chain. The error is attached to the context so the request log
// records it.
func WriteError(c *gin.Context, err error) {
	if err == nil {
		err = errors.New("httpapi: WriteError called with a nil error")
	}
	e := AsError(err)
	_ = c.Error(err)
	if e.Status >= http.StatusInternalServerError && e.Code == CodeInternal {
		// Give the caller a handle on the log line without exposing internals.
		copied := *e
		copied.Cause = "internal error (request id " + RequestID(c.Request.Context()) + ")"
		e = &copied
	}
	c.AbortWithStatusJSON(e.Status, e)
}
