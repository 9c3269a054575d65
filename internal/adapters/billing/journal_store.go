package billing

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/record"
)

// StoreSink stores journal entries as domain.BillingCalled events in the
// account's stream (account-{id}), so they show in the account history.
// They are appended with no expected revision: they decide nothing, and a
// concurrent account command simply retries on the moved revision.
type StoreSink struct {
	Store    eventstore.Store
	Registry *domain.Registry
	// Policy resends an append whose outcome is unknown (the zero value:
	// record's defaults).
	Policy record.Policy
}

// Save implements Sink: the calls of account in one append.
func (s StoreSink) Save(ctx context.Context, account int64, calls []Call) error {
	if account <= 0 {
		return fmt.Errorf("billing journal: account %d is not a valid id", account)
	}
	rec := record.Log{Store: s.Store, Registry: s.Registry, Policy: s.Policy}
	parts := make([]record.Batch, 0, len(calls))
	for _, c := range calls {
		b, err := s.encode(rec, c)
		if err != nil {
			return err
		}
		parts = append(parts, b)
	}
	if len(parts) == 0 {
		return nil
	}
	_, err := rec.Append(ctx, domain.AccountStream(account), eventstore.Any, record.Join(parts...))
	return err
}

// encode encodes one call with its own metadata.
func (s StoreSink) encode(rec record.Log, c Call) (record.Batch, error) {
	e := domain.BillingCalled{
		AccountID: c.Account, Provider: c.Provider, DeviceID: c.Device,
		Route: c.Route, Method: c.Method, Path: c.Path, Status: c.Status,
		LatencyMS: c.Latency.Milliseconds(), Failure: c.Failure,
	}
	meta := domain.Metadata{OccurredAt: c.At, Actor: domain.SystemActor(), RequestID: c.RequestID}
	if c.Device > 0 {
		meta.Actor = domain.DeviceActor(c.Device)
	}
	if domain.ValidateRequestID(meta.RequestID) != nil {
		meta.RequestID = uuid.NewString()
	}
	// A random id: a request id a client chose must not make two calls
	// collide. It is drawn once, so a resend of the append stores it once.
	b, err := rec.Encode([]domain.Event{e}, meta, record.Explicit(eventstore.EventID(uuid.New())))
	if err != nil {
		return record.Batch{}, errors.Join(errors.New("billing journal"), err)
	}
	return b, nil
}
