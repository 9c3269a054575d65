package command

import (
	"context"
	"fmt"
	"time"

	"tvsm/domain"
	"tvsm/internal/app"
	"tvsm/internal/app/query"
	"tvsm/projections/readmodel"
)

// SubscriptionInput is the body of a subscription create or update. A
// create needs Account (a device subscription: Device), Tariff ("tarif")
// and Start; Stop is optional (null: open-ended). An update changes the
// fields present: a Stop value ends the subscription, a null Stop reopens
// it. Account and Device may be re-sent on an update but cannot change.
type SubscriptionInput struct {
	Account        domain.Optional[int64]
	Device         domain.Optional[int64]
	Tariff         domain.Optional[int64]
	Start          domain.Optional[time.Time]
	Stop           domain.Optional[time.Time]
	TimeShiftDepth domain.Optional[int64]
}

// Subscriptions handles the commands on subscriptions, events of the
// account's stream: the accounts' own (TVIP's account_subscriptions), or,
// with devices set, those of bound devices (device_subscriptions), which
// give that device alone the tariff. One kind's ids are not found as the
// other's.
type Subscriptions struct {
	w       *writer
	devices bool
}

// reads are the queries of the handler's kind of subscription.
func (h *Subscriptions) reads() *query.Subscriptions {
	if h.devices {
		return h.w.q.DeviceSubscriptions
	}
	return h.w.q.Subscriptions
}

// Create subscribes an account (or a bound device) to a tariff of its
// provider and returns the new subscription. An unknown account, device
// or tariff, or a tariff of another provider, is a
// *domain.ValidationError naming account, device or tarif; an account
// outside the caller's scope is app.ErrForbidden.
func (h *Subscriptions) Create(ctx context.Context, c app.Caller, in SubscriptionInput) (readmodel.Subscription, error) {
	w := h.w
	accountID, device, err := h.owner(in)
	if err != nil {
		return readmodel.Subscription{}, err
	}
	acc, ok := w.model.Account(accountID)
	if !ok {
		return readmodel.Subscription{}, domain.NewValidationError("account", problemUnknown)
	}
	if err := c.CheckScope(acc.Provider); err != nil {
		return readmodel.Subscription{}, fmt.Errorf("account %d: %w", accountID, err)
	}
	cmd := domain.AddSubscription{
		AccountID:      accountID,
		Device:         device,
		Start:          in.Start.Or(time.Time{}),
		Stop:           in.Stop.Ptr(),
		TimeShiftDepth: intPtr(in.TimeShiftDepth),
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
	probeState := domain.Account{ID: accountID, Provider: acc.Provider}
	if device != 0 {
		probeState.Devices = []domain.Device{{ID: device}}
	}
	if _, err := domain.AccountDecider().Decide(probeState, probe, w.now()); err != nil {
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
	return h.reads().Current(id)
}

// owner returns the account (and, for a device subscription, the device)
// a create names.
func (h *Subscriptions) owner(in SubscriptionInput) (account, device int64, err error) {
	if !h.devices {
		account, ok := in.Account.Get()
		if !ok {
			return 0, 0, domain.NewValidationError("account", problemRequired)
		}
		return account, 0, nil
	}
	device, ok := in.Device.Get()
	if !ok {
		return 0, 0, domain.NewValidationError("device", problemRequired)
	}
	d, found := h.w.model.Device(device)
	if !found {
		return 0, 0, domain.NewValidationError("device", problemUnknown)
	}
	return d.Account, device, nil
}

// Update changes the fields of subscription id that in carries and returns
// the subscription as the read model then shows it.
func (h *Subscriptions) Update(ctx context.Context, c app.Caller, id int64, in SubscriptionInput) (readmodel.Subscription, error) {
	w := h.w
	cur, err := h.reads().Get(ctx, c, id)
	if err != nil {
		return readmodel.Subscription{}, err
	}
	if v, ok := in.Account.Get(); ok && v != cur.Account {
		return readmodel.Subscription{}, domain.NewValidationError("account", problemImmutable)
	}
	if v, ok := in.Device.Get(); ok && h.devices && v != cur.Device {
		return readmodel.Subscription{}, domain.NewValidationError("device", problemImmutable)
	}
	cmd := domain.UpdateSubscription{
		AccountID:      cur.Account,
		SubscriptionID: id,
		Tariff:         in.Tariff,
		Start:          in.Start,
		Stop:           in.Stop,
		TimeShiftDepth: intOptional(in.TimeShiftDepth),
	}
	if tariff, ok := in.Tariff.Get(); ok && tariff != cur.Tariff {
		if cmd.TariffProvider, ok = h.tariffProvider(tariff); !ok {
			return readmodel.Subscription{}, domain.NewValidationError("tarif", problemUnknown)
		}
	}
	if _, err := execute(ctx, w, c, cmd.Stream(), domain.AccountDecider(), domain.AccountCommand(cmd)); err != nil {
		return readmodel.Subscription{}, err
	}
	return h.reads().Current(id)
}

// Delete removes subscription id outright (ending it is an update with
// stop) and returns it as it was.
func (h *Subscriptions) Delete(ctx context.Context, c app.Caller, id int64) (readmodel.Subscription, error) {
	w := h.w
	cur, err := h.reads().Get(ctx, c, id)
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
