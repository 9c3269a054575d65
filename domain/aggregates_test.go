package domain_test

import (
	"errors"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/domain/domaintest"
)

// Helpers shared by the aggregate tests.

// eventRegistry returns a registry holding every aggregate event.
func eventRegistry() *domain.Registry {
	r := domain.NewRegistry()
	domain.RegisterEvents(r)
	return r
}

func ptr[T any](v T) *T { return &v }

// day returns midnight UTC of the given date in 2026.
func day(month time.Month, d int) time.Time { return time.Date(2026, month, d, 0, 0, 0, 0, time.UTC) }

// wantFields checks that err is a *ValidationError naming exactly fields.
func wantFields(t *testing.T, err error, fields ...string) {
	t.Helper()
	var ve *domain.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v (%T), want a *ValidationError naming %v", err, err, fields)
	}
	if !errors.Is(err, domain.ErrValidation) {
		t.Errorf("errors.Is(%v, ErrValidation) = false", err)
	}
	if len(ve.Fields) != len(fields) {
		t.Errorf("fields %v, want exactly %v", ve.Fields, fields)
	}
	for _, f := range fields {
		if _, ok := ve.Fields[f]; !ok {
			t.Errorf("fields %v do not name %q", ve.Fields, f)
		}
	}
}

// decideErr decides c on the state after given and returns the error,
// failing when Decide succeeds or returns events with the error.
func decideErr[S, C any](t *testing.T, d domain.Decider[S, C], c C, given ...domain.Event) error {
	t.Helper()
	events, err := d.Decide(d.Replay(given...), c, domaintest.Now())
	if err == nil {
		t.Fatalf("Decide succeeded with %v, want an error", events)
	}
	if len(events) > 0 {
		t.Errorf("Decide returned events %v together with error %v", events, err)
	}
	return err
}
