package command

import (
	"context"
	"fmt"
	"time"

	"tvsm/domain"
	"tvsm/internal/app"
	"tvsm/projections/readmodel"
)

// SubscriptionInput is the body of a subscription create or update. A
// create needs Account, Tariff ("tarif") and Start; Stop is optional (null:
// open-ended). An update changes the fields present: a Stop value ends the
// subscription, a null Stop reopens it. Account may be re-sent on an update
// but cannot change.
type SubscriptionInput struct {
	Account domain.Optional[int64]
	Tariff  domain.Optional[int64]
	Start   domain.Optional[time.Time]
	Stop    domain.Optional[time.Time]
}

// Subscriptions handles the commands on account subscriptions (events of
// the account's stream).
type Subscriptions struct{ w *writer }

// Create subscribes an account to a tariff of its provider and returns the
// new subscription. An unknown account or tariff, or a tariff of another
// provider, is a *domain.ValidationError naming account or tarif; an
// account outside the caller's scope is app.ErrForbidden.
func (h *Subscriptions) Create(ctx context.Context, c app.Caller, in SubscriptionInput) (readmodel.Subscription, error) {
	w := h.w
	accountID, ok := in.Account.Get()
	if !ok {
		return readmodel.Subscription{}, domain.NewValidationError("account", problemRequired)
	}
	acc, ok := w.model.Account(accountID)
	if !ok {
		return readmodel.Subscription{}, domain.NewValidationError("account", problemUnknown)
	}
	if err := c.CheckScope(acc.Provider); err != nil {
		return readmodel.Subscription{}, fmt.Errorf("account %d: %w", accountID, err)
	}
	cmd := domain.AddSubscription{
		AccountID: accountID,
		Start:     in.Start.Or(time.Time{}),
		Stop:      in.Stop.Ptr(),
	}
	if tariff, ok := in.Tariff.Get(); ok {
		cmd.Tariff = tariff
		if cmd.TariffProvider, ok = h.tariffProvider(tariff); !ok {
			return readmodel.Subscription{}, domain.NewValidationError("tarif", problemUnknown)
		}
	}
	// Field problems before an id is taken.
	probe := cmd
	probe.SubscriptionID = 1
	if _, err := domain.AccountDecider().Decide(domain.Account{ID: accountID, Provider: acc.Provider}, probe, w.now()); err != nil {
		return readmodel.Subscription{}, err
	}

	id, err := w.x.NewID(ctx, "subscription")
	if err != nil {
		return readmodel.Subscription{}, err
	}
	cmd.SubscriptionID = id
	if _, err := execute(ctx, w, c, cmd.Stream(), domain.AccountDecider(), domain.AccountCommand(cmd)); err != nil {
		return readmodel.Subscription{}, err
	}
	return w.q.Subscriptions.Current(id)
}

// Update changes the fields of subscription id that in carries and returns
// the subscription as the read model then shows it.
func (h *Subscriptions) Update(ctx context.Context, c app.Caller, id int64, in SubscriptionInput) (readmodel.Subscription, error) {
	w := h.w
	cur, err := w.q.Subscriptions.Get(ctx, c, id)
	if err != nil {
		return readmodel.Subscription{}, err
	}
	if v, ok := in.Account.Get(); ok && v != cur.Account {
		return readmodel.Subscription{}, domain.NewValidationError("account", problemImmutable)
	}
	cmd := domain.UpdateSubscription{
		AccountID:      cur.Account,
		SubscriptionID: id,
		Tariff:         in.Tariff,
		Start:          in.Start,
		Stop:           in.Stop,
	}
	if tariff, ok := in.Tariff.Get(); ok && tariff != cur.Tariff {
		if cmd.TariffProvider, ok = h.tariffProvider(tariff); !ok {
			return readmodel.Subscription{}, domain.NewValidationError("tarif", problemUnknown)
		}
	}
	if _, err := execute(ctx, w, c, cmd.Stream(), domain.AccountDecider(), domain.AccountCommand(cmd)); err != nil {
		return readmodel.Subscription{}, err
	}
	return w.q.Subscriptions.Current(id)
}

// Delete removes subscription id outright (ending it is an update with
// stop) and returns it as it was.
func (h *Subscriptions) Delete(ctx context.Context, c app.Caller, id int64) (readmodel.Subscription, error) {
	w := h.w
	cur, err := w.q.Subscriptions.Get(ctx, c, id)
	if err != nil {
		return readmodel.Subscription{}, err
	}
	cmd := domain.RemoveSubscription{AccountID: cur.Account, SubscriptionID: id}
	if _, err := execute(ctx, w, c, cmd.Stream(), domain.AccountDecider(), domain.AccountCommand(cmd)); err != nil {
		return readmodel.Subscription{}, err
	}
	return cur, nil
}

// tariffProvider returns the provider of a tariff that exists.
func (h *Subscriptions) tariffProvider(id int64) (int64, bool) {
	t, ok := h.w.model.Tariff(id)
	if !ok {
		return 0, false
	}
	return t.Provider, true
}
