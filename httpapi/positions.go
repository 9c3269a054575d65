package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"tvsm/eventstore"
	"tvsm/internal/app"
)

// Headers of read-your-writes across nodes. Every write answers
// HeaderPosition, the log position its events reached (or, when it wrote
// nothing, what the node had applied); a request that sends
// HeaderMinPosition with such a value is answered only once the node has
// applied the log up to it, so a sync job whose requests a load balancer
// spreads over several nodes reads what it wrote. Positions are opaque
// strings (FormatPosition).
const (
	HeaderPosition    = "X-TVSM-Position"
	HeaderMinPosition = "X-TVSM-Min-Position"
)

// AppliedProgress is how far the node's read model has applied the log,
// and a way to wait for it (*projections.Progress).
type AppliedProgress interface {
	Position() eventstore.Position
	// WaitWithin waits until pos is applied (true), ctx ends (its error)
	// or timeout passes (false, nil).
	WaitWithin(ctx context.Context, pos eventstore.Position, timeout time.Duration) (bool, error)
}

// errMinPosition is the field problem of a malformed HeaderMinPosition.
var errMinPosition = errors.New(`must be the value of an ` + HeaderPosition + ` header, such as "123" or "123/120"`)

// positionsMiddleware gives writes their HeaderPosition and notes a
// request's HeaderMinPosition (a malformed one is answered 400 at once).
// The wait for it comes later, in AwaitMinPosition, once the request is
// authenticated: an anonymous client cannot hold a request open for the
// timeout.
func positionsMiddleware(applied AppliedProgress, timeout time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		if v := c.GetHeader(HeaderMinPosition); v != "" {
			pos, err := ParsePosition(v)
			if err != nil {
				WriteError(c, ValidationFailed(map[string]string{HeaderMinPosition: errMinPosition.Error()}))
				return
			}
			c.Set(minPositionKey, &minPositionWait{applied: applied, pos: pos, timeout: timeout})
		}
		switch c.Request.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			c.Next()
			return
		}
		ctx, written := app.TrackWrites(c.Request.Context())
		c.Request = c.Request.WithContext(ctx)
		w := &positionWriter{ResponseWriter: c.Writer, written: written, applied: applied}
		c.Writer = w
		c.Next()
		w.stamp() // a handler that set a status but wrote nothing
		if w.Header().Get("Trailer") == HeaderPosition {
			// A streamed answer declared the header as its trailer too:
			// now it names every write the request made.
			w.Header().Set(HeaderPosition, FormatPosition(w.position()))
		}
	}
}

// minPositionKey holds, in the gin context, the wait a request's
// HeaderMinPosition asks for, until AwaitMinPosition has done it.
const minPositionKey = "tvsm.minPosition"

type minPositionWait struct {
	applied AppliedProgress
	pos     eventstore.Position
	timeout time.Duration
	done    bool
}

// AwaitMinPosition holds a request that sent HeaderMinPosition until the
// node has applied that position, at most the timeout; then it answers 503
// with Retry-After (the client may retry here or on another node) and
// returns false. The authentication middlewares call it once they have
// authenticated the request, and the device login (which is the
// authentication) before it checks the credentials against the read model.
// Without the header, or once waited, it returns true at once.
func AwaitMinPosition(c *gin.Context) bool {
	v, ok := c.Get(minPositionKey)
	if !ok {
		return true
	}
	w := v.(*minPositionWait)
	if w.done {
		return true
	}
	w.done = true
	ok, err := w.applied.WaitWithin(c.Request.Context(), w.pos, w.timeout)
	if err != nil {
		WriteError(c, err)
		return false
	}
	if !ok {
		c.Header("Retry-After", "1")
		WriteError(c, Unavailable(fmt.Sprintf("this node has applied the log up to %s, not yet %s (waited %v); retry",
			FormatPosition(w.applied.Position()), FormatPosition(w.pos), w.timeout)))
		return false
	}
	return true
}

// positionWriter sets HeaderPosition just before the answer's headers are
// sent: by then the write has noted every position it reached.
type positionWriter struct {
	gin.ResponseWriter
	written *app.WrittenPositions
	applied AppliedProgress
	stamped bool
}

func (w *positionWriter) stamp() {
	if w.stamped || w.ResponseWriter.Written() {
		return
	}
	w.stamped = true
	w.Header().Set(HeaderPosition, FormatPosition(w.position()))
}

// position is the newest position the request's writes reached; when it
// wrote nothing (a no-op, or refused), what the node had applied, which
// covers every state the request can have seen.
func (w *positionWriter) position() eventstore.Position {
	if pos := w.written.Latest(); !pos.IsZero() {
		return pos
	}
	return w.applied.Position()
}

func (w *positionWriter) WriteHeaderNow() {
	w.stamp()
	w.ResponseWriter.WriteHeaderNow()
}

func (w *positionWriter) Write(b []byte) (int, error) {
	w.stamp()
	return w.ResponseWriter.Write(b)
}

func (w *positionWriter) WriteString(s string) (int, error) {
	w.stamp()
	return w.ResponseWriter.WriteString(s)
}

func (w *positionWriter) Flush() {
	w.stamp()
	w.ResponseWriter.Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer, for
// the bulk route's full-duplex streaming: without it EnableFullDuplex
// fails, and the request body cannot be read once the answer has begun.
func (w *positionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
