package query

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/internal/app"
	"tvsm/projections"
	"tvsm/projections/readmodel"
)

// Reads as of a past time (?as_of= on account and subscription reads):
// accounts as they stood then, as far as the log tells — the events of
// each account's stream that happened (their occurred-at) at or before the
// time, applied to a read model of the request's own by the same code as
// the live one, so filters, order and paging mean what they mean live.
// What only the devices' own streams tell (last_online) is left out: it is
// null in these answers.

// MaxAsOfAccounts bounds the accounts an as_of list reads: each is its
// stream read from the log.
const MaxAsOfAccounts = 100_000

// ErrAsOfTooMany is the answer to an as_of list over more accounts than
// MaxAsOfAccounts.
var ErrAsOfTooMany = domain.NewValidationError("as_of",
	fmt.Sprintf("an as_of list reads every account's history: narrow it with provider (at most %d accounts)", MaxAsOfAccounts))

// AsOf returns account id as it stood at t: domain.ErrNotFound when it did
// not exist then, app.ErrForbidden outside the caller's scope.
func (q *Accounts) AsOf(ctx context.Context, c app.Caller, id int64, t time.Time) (AccountView, error) {
	provider, ok := q.r.cfg.Model.AccountOwner(id)
	if !ok {
		return AccountView{}, notFound("account", id)
	}
	if err := c.CheckScope(provider); err != nil {
		return AccountView{}, fmt.Errorf("account %d: %w", id, err)
	}
	m, err := q.r.modelAt(ctx, []int64{id}, t)
	if err != nil {
		return AccountView{}, err
	}
	a, ok := m.Account(id)
	if !ok {
		return AccountView{}, fmt.Errorf("account %d at %s: %w", id, t.Format(time.RFC3339), domain.ErrNotFound)
	}
	return viewAt(m, a, t), nil
}

// ListAsOf lists the accounts aq selects as they stood at t, within the
// caller's scope.
func (q *Accounts) ListAsOf(ctx context.Context, c app.Caller, aq readmodel.AccountQuery, t time.Time) (readmodel.List[AccountView], error) {
	aq.Scope = listScope(c)
	m, err := q.r.modelAtScope(ctx, aq.Scope, aq.Provider, t)
	if err != nil {
		return readmodel.List[AccountView]{}, err
	}
	l, err := m.ListAccounts(aq)
	if err != nil {
		return readmodel.List[AccountView]{}, listError(err)
	}
	return readmodel.List[AccountView]{Total: l.Total, Items: func(yield func(AccountView) bool) {
		for a := range l.Items {
			if !yield(viewAt(m, a, t)) {
				return
			}
		}
	}}, nil
}

// SubscriptionsAsOf lists the account subscriptions sq selects as they
// stood at t. It needs sq.Account: it reads that account's history.
func (q *Accounts) SubscriptionsAsOf(ctx context.Context, c app.Caller, sq readmodel.SubscriptionQuery, t time.Time) (readmodel.List[readmodel.Subscription], error) {
	if sq.Account == 0 {
		return readmodel.List[readmodel.Subscription]{}, domain.NewValidationError("as_of", "needs account: subscriptions as of a time are read from that account's history")
	}
	if provider, ok := q.r.cfg.Model.AccountOwner(sq.Account); ok {
		if err := c.CheckScope(provider); err != nil {
			return readmodel.List[readmodel.Subscription]{}, fmt.Errorf("account %d: %w", sq.Account, err)
		}
	}
	m, err := q.r.modelAt(ctx, []int64{sq.Account}, t)
	if err != nil {
		return readmodel.List[readmodel.Subscription]{}, err
	}
	sq.Scope, sq.Devices = listScope(c), false
	l, err := m.ListSubscriptions(sq)
	return l, listError(err)
}

// DevicesAsOf lists the devices dq selects that were bound at t, with
// what the provider had set of them then (what only their own streams
// tell, their logins and connections, is left out). It needs dq.Account.
func (q *Accounts) DevicesAsOf(ctx context.Context, c app.Caller, dq readmodel.DeviceQuery, t time.Time) (readmodel.List[readmodel.Device], error) {
	if dq.Account == 0 {
		return readmodel.List[readmodel.Device]{}, domain.NewValidationError("as_of", "needs account: devices as of a time are read from that account's history")
	}
	if provider, ok := q.r.cfg.Model.AccountOwner(dq.Account); ok {
		if err := c.CheckScope(provider); err != nil {
			return readmodel.List[readmodel.Device]{}, fmt.Errorf("account %d: %w", dq.Account, err)
		}
	}
	m, err := q.r.modelAt(ctx, []int64{dq.Account}, t)
	if err != nil {
		return readmodel.List[readmodel.Device]{}, err
	}
	dq.Scope = listScope(c)
	l, err := m.ListDevices(dq)
	return l, listError(err)
}

// viewAt is view at t, services judged at t.
func viewAt(m *readmodel.Model, a readmodel.Account, t time.Time) AccountView {
	v := AccountView{Account: a}
	if a.Enabled {
		for _, sub := range m.AccountSubscriptions(a.ID) {
			if sub.Device == 0 && sub.ActiveAt(t) {
				v.ServicesAvailable = true
				break
			}
		}
	}
	return v
}

// modelAtScope is modelAt for every account, live or deleted, of provider
// (0: any) within scope.
func (r *reader) modelAtScope(ctx context.Context, scope readmodel.Scope, provider int64, t time.Time) (*readmodel.Model, error) {
	ids := r.cfg.Model.AccountsEver(scope, provider)
	if len(ids) > MaxAsOfAccounts {
		return nil, ErrAsOfTooMany
	}
	return r.modelAt(ctx, ids, t)
}

// modelAt returns a read model of the accounts ids as they stood at t.
func (r *reader) modelAt(ctx context.Context, ids []int64, t time.Time) (*readmodel.Model, error) {
	m := readmodel.New(r.cfg.Registry)
	for _, id := range ids {
		recs, err := r.rec.Store.ReadStream(ctx, domain.AccountStream(id), eventstore.Start, 0)
		if errors.Is(err, eventstore.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := m.Apply(ctx, happenedBy(projections.Decode(r.cfg.Registry, recs), t), projections.Replay); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// happenedBy yields the events of evs that happened at or before t.
func happenedBy(evs iter.Seq[*projections.Event], t time.Time) iter.Seq[*projections.Event] {
	return func(yield func(*projections.Event) bool) {
		for ev := range evs {
			if ev.OccurredAt.After(t) {
				continue
			}
			if !yield(ev) {
				return
			}
		}
	}
}
