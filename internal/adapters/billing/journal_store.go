package billing

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"tvsm/domain"
	"tvsm/eventstore"
)

// StoreSink stores journal entries as domain.BillingCalled events in the
// account's stream (account-{id}), so they show in the account history.
// They are appended with no expected revision: they decide nothing, and a
// concurrent account command simply retries on the moved revision.
type StoreSink struct {
	Store    eventstore.Store
	Registry *domain.Registry
}

// Save implements Sink: the calls of account in one append.
func (s StoreSink) Save(ctx context.Context, account int64, calls []Call) error {
	if account <= 0 {
		return fmt.Errorf("billing journal: account %d is not a valid id", account)
	}
	data := make([]eventstore.EventData, 0, len(calls))
	for _, c := range calls {
		d, err := s.encode(c)
		if err != nil {
			return err
		}
		data = append(data, d)
	}
	if len(data) == 0 {
		return nil
	}
	_, err := s.Store.Append(ctx, domain.AccountStream(account), eventstore.Any, data...)
	return err
}

func (s StoreSink) encode(c Call) (eventstore.EventData, error) {
	e := domain.BillingCalled{
		AccountID: c.Account, Provider: c.Provider, DeviceID: c.Device,
		Route: c.Route, Method: c.Method, Path: c.Path, Status: c.Status,
		LatencyMS: c.Latency.Milliseconds(), Failure: c.Failure,
	}
	typ, body, err := s.Registry.Encode(e)
	if err != nil {
		return eventstore.EventData{}, err
	}
	env := domain.Envelope{Event: e, OccurredAt: c.At, Actor: domain.SystemActor(), RequestID: c.RequestID}
	if c.Device > 0 {
		env.Actor = domain.DeviceActor(c.Device)
	}
	if domain.ValidateRequestID(env.RequestID) != nil {
		env.RequestID = uuid.NewString()
	}
	md, err := domain.EncodeMetadata(env)
	if err != nil {
		return eventstore.EventData{}, errors.Join(errors.New("billing journal"), err)
	}
	// A random id: the journal never re-sends an append, and a request id a
	// client chose must not make two calls collide.
	return eventstore.EventData{ID: eventstore.EventID(uuid.New()), Type: typ, Data: body, Metadata: md}, nil
}
