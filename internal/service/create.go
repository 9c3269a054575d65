package service

import (
	"context"
	"fmt"

	"tvsm/eventstore"
	"tvsm/internal/app"
)

// Creates of both APIs answer with the whole new object and happen at most
// once per Idempotency-Key; this is the one place that arranges it.

// createdStatus is the status an idempotent create records with its
// response: the API answers creates with 200 and the whole object.
const createdStatus = 200

// createOnce runs a create at most once per Idempotency-Key of the caller
// (app.Executor.Idempotent) and answers with encode's rendering of what it
// created, as the read model shows it once the write is applied; a retry
// with the same key gets the recorded rendering. what names the kind of
// object ("provider", "account"), which keeps keys used on different routes apart;
// fingerprint gives the text that stands for the request body (a retry with
// the same key must carry the same input); it is called only when there is
// a key. do takes its new ids from pins, appends through
// app.Execute with the ctx it is given, and returns the position of its
// write and how to read the result back. Without a key do simply runs.
func createOnce[T any](ctx context.Context, s *Service, c Caller, what string, fingerprint func() string, encode BodyEncoder[T],
	do func(ctx context.Context, pins *app.Pins) (eventstore.Position, func() (T, error), error)) ([]byte, error) {
	req := app.IdempotentRequest{Key: c.IdempotencyKey, Meta: c.meta()}
	if req.Key != "" {
		req.Scope = "admin:" + c.Admin + " create " + what
		req.Body = []byte(fingerprint())
	}
	_, body, err := s.cfg.Executor.Idempotent(ctx, req, func(ctx context.Context, pins *app.Pins) (int, []byte, error) {
		pos, read, err := do(ctx, pins)
		if err != nil {
			return 0, nil, err
		}
		if err := s.written(ctx, pos); err != nil {
			return 0, nil, err
		}
		v, err := read()
		if err != nil {
			return 0, nil, err
		}
		body, err := encode(v)
		if err != nil {
			return 0, nil, fmt.Errorf("service: create %s: encode the answer: %w", what, err)
		}
		return createdStatus, body, nil
	})
	return body, err
}

// fingerprintOf is the text an idempotent create hashes as its request: the
// Go syntax of the decoded input, which tells absent, null and values apart
// and quotes strings. Inputs are structs of Optional fields (no pointers),
// so equal inputs always print alike. The text is made only when asked
// for: printing the input costs more than the rest of a create's decoding.
func fingerprintOf(what string, input any) func() string {
	return func() string { return fmt.Sprintf("%s %#v", what, input) }
}
