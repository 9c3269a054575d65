package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"tvsm/internal/app"
)

// IdempotencyKeyHeader names a POST create, so that its retries create once.
const IdempotencyKeyHeader = "Idempotency-Key"

// createOnce runs a create at most once per Idempotency-Key of the caller
// and answers with its rendering: 200 and the whole new object, as the
// original product answers creates. A retry with the same key and the same
// request gets the recorded answer; the same key with another request is a
// mismatch (422). what names the kind of object, which keeps keys used on
// different routes apart; fp gives the text that stands for the request
// body (a retry with the same key must carry the same input), and is
// called only when there is a key. Without a key the create simply runs.
func createOnce[T any](c *gin.Context, idem Idempotency, what string, fp func() ([]byte, error),
	create func(ctx context.Context, caller app.Caller) (T, error), render func(T) ([]byte, error)) {
	caller := callerOf(c)
	req := app.IdempotentRequest{Key: caller.IdempotencyKey, Meta: caller.Meta()}
	if req.Key != "" {
		req.Scope = "admin:" + caller.Admin + " create " + what
		body, err := fp()
		if err != nil {
			WriteError(c, fmt.Errorf("httpapi: create %s: fingerprint: %w", what, err))
			return
		}
		req.Body = body
	}
	_, body, err := idem.Idempotent(c.Request.Context(), req, func(ctx context.Context) (int, []byte, error) {
		v, err := create(ctx, caller)
		if err != nil {
			return 0, nil, err
		}
		body, err := render(v)
		if err != nil {
			return 0, nil, fmt.Errorf("httpapi: create %s: render the answer: %w", what, err)
		}
		return http.StatusOK, body, nil
	})
	if err != nil {
		WriteError(c, err)
		return
	}
	providerRaw(c, body)
}

// fingerprintOf is the text an idempotent create hashes as its request:
// what and the Go syntax of the decoded input, which tells absent, null and
// values apart and quotes strings. Inputs are structs of Optional fields
// (no pointers), so equal inputs always print alike. The text is made only
// when asked for: printing the input costs more than the rest of a
// create's decoding. The input's
// package is printed as "service", the name it had when keys were first
// recorded: the hash is stored with the key for a day, and a retry sent
// across an upgrade must still match it.
func fingerprintOf(what string, input any) func() ([]byte, error) {
	return func() ([]byte, error) {
		text := fmt.Sprintf("%#v", input)
		if rest, ok := strings.CutPrefix(text, "command."); ok {
			text = "service." + rest
		}
		return []byte(what + " " + text), nil
	}
}
