package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"tvsm/httpapi"
	"tvsm/internal/app"
)

// The answers to a key in use and to a key reused with another body say
// what to do, with Retry-After for the former, and never name the key's
// internal record stream or the layer that refused.
func TestIdempotencyRefusalsNameNothingInternal(t *testing.T) {
	const stream = "idem-0123456789abcdef"
	for _, c := range []struct {
		err        error
		status     int
		code       string
		retryAfter string
	}{
		{&app.OpError{Op: "decide", Stream: stream, Err: &app.InProgressError{Attempt: 1, Until: time.Now(), Wait: 2100 * time.Millisecond}},
			http.StatusConflict, "conflict", "3"},
		{&app.OpError{Op: "pin", Stream: stream, Err: fmt.Errorf("%w: generation 1 replaced by 2", app.ErrIdempotencyInProgress)},
			http.StatusConflict, "conflict", ""},
		{&app.OpError{Op: "decide", Stream: stream, Err: app.ErrIdempotencyMismatch},
			http.StatusUnprocessableEntity, "idempotency_key_mismatch", ""},
	} {
		w := httptest.NewRecorder()
		ctx, _ := gin.CreateTestContext(w)
		ctx.Request = httptest.NewRequest(http.MethodPost, "/api/provider/accounts", nil)
		httpapi.WriteError(ctx, c.err)
		var body struct {
			Status int    `json:"statusCode"`
			Code   string `json:"error"`
			Cause  string `json:"cause"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != c.status || body.Code != c.code ||
			!strings.Contains(body.Cause, "Idempotency-Key") {
			t.Errorf("%v: %d %s", c.err, w.Code, w.Body)
		}
		if strings.Contains(w.Body.String(), "idem-") || strings.Contains(w.Body.String(), "app:") {
			t.Errorf("%v: the body names internals: %s", c.err, w.Body)
		}
		if got := w.Header().Get("Retry-After"); got != c.retryAfter {
			t.Errorf("%v: Retry-After %q, want %q", c.err, got, c.retryAfter)
		}
	}
}
