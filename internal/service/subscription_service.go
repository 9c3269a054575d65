package service

import (
	"context"
	"fmt"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/internal/app"
	"tvsm/projections/readmodel"
)

// SubscriptionInput is the body of a subscription create or update (spec
// §2.2). A create needs Account, Tariff ("tarif") and Start; Stop is
// optional (null: open-ended). An update changes the fields present: a Stop
// value ends the subscription, a null Stop reopens it. Account may be
// re-sent on an update but cannot change.
type SubscriptionInput struct {
	Account domain.Optional[int64]
	Tariff  domain.Optional[int64]
	Start   domain.Optional[time.Time]
	Stop    domain.Optional[time.Time]
}

// ListSubscriptions returns the subscriptions q selects within the
// caller's scope (q.Scope is overwritten).
func (s *Service) ListSubscriptions(ctx context.Context, c Caller, q readmodel.SubscriptionQuery) (readmodel.List[readmodel.Subscription], error) {
	q.Scope = c.papiScope()
	l, err := s.cfg.Model.ListSubscriptions(q)
	return l, papiListError(err)
}

// Subscription returns subscription id (domain.ErrNotFound, ErrForbidden
// as Account does).
func (s *Service) Subscription(ctx context.Context, c Caller, id int64) (readmodel.Subscription, error) {
	sub, ok := s.cfg.Model.Subscription(id)
	if !ok {
		return readmodel.Subscription{}, fmt.Errorf("subscription %d: %w", id, domain.ErrNotFound)
	}
	if err := c.checkScope(sub.Provider); err != nil {
		return readmodel.Subscription{}, fmt.Errorf("subscription %d: %w", id, err)
	}
	return sub, nil
}

// CreateSubscription subscribes an account to a tariff of its provider and
// answers with encode's rendering of the new subscription. An unknown
// account or tariff, or a tariff of another provider, is a
// *domain.ValidationError naming account or tarif; an account outside the
// caller's scope is ErrForbidden. The caller's Idempotency-Key makes it
// happen at most once.
func (s *Service) CreateSubscription(ctx context.Context, c Caller, in SubscriptionInput, encode BodyEncoder[readmodel.Subscription]) ([]byte, error) {
	accountID, ok := in.Account.Get()
	if !ok {
		return nil, domain.NewValidationError("account", papiRequired)
	}
	acc, ok := s.cfg.Model.Account(accountID)
	if !ok {
		return nil, domain.NewValidationError("account", papiUnknown)
	}
	if err := c.checkScope(acc.Provider); err != nil {
		return nil, fmt.Errorf("account %d: %w", accountID, err)
	}
	cmd := domain.AddSubscription{
		AccountID: accountID,
		Start:     in.Start.Or(time.Time{}),
		Stop:      in.Stop.Ptr(),
	}
	if tariff, ok := in.Tariff.Get(); ok {
		cmd.Tariff = tariff
		if cmd.TariffProvider, ok = s.subscriptionTariffProvider(tariff); !ok {
			return nil, domain.NewValidationError("tarif", papiUnknown)
		}
	}
	// Field problems before an id is taken.
	probe := cmd
	probe.SubscriptionID = 1
	if _, err := domain.AccountDecider().Decide(domain.Account{ID: accountID, Provider: acc.Provider}, probe, s.now()); err != nil {
		return nil, err
	}

	return createOnce(ctx, s, c, "subscription", fingerprintOf("subscription", in), encode,
		func(ctx context.Context, pins *app.Pins) (eventstore.Position, func() (readmodel.Subscription, error), error) {
			id, err := pins.ID(ctx, "subscription")
			if err != nil {
				return eventstore.Position{}, nil, err
			}
			cmd.SubscriptionID = id
			res, err := app.Execute(ctx, s.cfg.Executor, cmd.Stream(), domain.AccountDecider(), domain.AccountCommand(cmd), c.meta())
			if err != nil {
				return eventstore.Position{}, nil, err
			}
			return res.Position, func() (readmodel.Subscription, error) { return s.subscriptionNow(id) }, nil
		})
}

// UpdateSubscription changes the fields of subscription id that in
// carries and returns the subscription as the read model then shows it.
func (s *Service) UpdateSubscription(ctx context.Context, c Caller, id int64, in SubscriptionInput) (readmodel.Subscription, error) {
	cur, err := s.Subscription(ctx, c, id)
	if err != nil {
		return readmodel.Subscription{}, err
	}
	if v, ok := in.Account.Get(); ok && v != cur.Account {
		return readmodel.Subscription{}, domain.NewValidationError("account", papiImmutable)
	}
	cmd := domain.UpdateSubscription{
		AccountID:      cur.Account,
		SubscriptionID: id,
		Tariff:         in.Tariff,
		Start:          in.Start,
		Stop:           in.Stop,
	}
	if tariff, ok := in.Tariff.Get(); ok && tariff != cur.Tariff {
		if cmd.TariffProvider, ok = s.subscriptionTariffProvider(tariff); !ok {
			return readmodel.Subscription{}, domain.NewValidationError("tarif", papiUnknown)
		}
	}
	res, err := app.Execute(ctx, s.cfg.Executor, cmd.Stream(), domain.AccountDecider(), domain.AccountCommand(cmd), c.meta())
	if err != nil {
		return readmodel.Subscription{}, err
	}
	return s.subscriptionAfter(ctx, id, res)
}

// DeleteSubscription removes subscription id outright (ending it is an
// update with stop) and returns it as it was.
func (s *Service) DeleteSubscription(ctx context.Context, c Caller, id int64) (readmodel.Subscription, error) {
	cur, err := s.Subscription(ctx, c, id)
	if err != nil {
		return readmodel.Subscription{}, err
	}
	cmd := domain.RemoveSubscription{AccountID: cur.Account, SubscriptionID: id}
	res, err := app.Execute(ctx, s.cfg.Executor, cmd.Stream(), domain.AccountDecider(), domain.AccountCommand(cmd), c.meta())
	if err != nil {
		return readmodel.Subscription{}, err
	}
	if err := s.written(ctx, res.Position); err != nil {
		return readmodel.Subscription{}, err
	}
	return cur, nil
}

// subscriptionAfter waits for the read model to apply a command's result
// and returns subscription id.
func (s *Service) subscriptionAfter(ctx context.Context, id int64, res app.Result[domain.Account]) (readmodel.Subscription, error) {
	if err := s.written(ctx, res.Position); err != nil {
		return readmodel.Subscription{}, err
	}
	return s.subscriptionNow(id)
}

// subscriptionNow returns subscription id as the read model shows it now.
func (s *Service) subscriptionNow(id int64) (readmodel.Subscription, error) {
	sub, ok := s.cfg.Model.Subscription(id)
	if !ok {
		return readmodel.Subscription{}, fmt.Errorf("subscription %d: %w", id, domain.ErrNotFound)
	}
	return sub, nil
}

// subscriptionTariffProvider returns the provider of a tariff that exists.
func (s *Service) subscriptionTariffProvider(id int64) (int64, bool) {
	t, ok := s.cfg.Model.Tariff(id)
	if !ok {
		return 0, false
	}
	return t.Provider, true
}
