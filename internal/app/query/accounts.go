package query

import (
	"context"
	"fmt"
	"time"

	"tvsm/internal/app"
	"tvsm/projections/readmodel"
)

// AccountView is an account as the Provider API shows it: the read model's
// copy and whether its devices get service now (enabled, with a
// subscription active now).
type AccountView struct {
	readmodel.Account
	ServicesAvailable bool
}

// Accounts answers the reads of accounts.
type Accounts struct{ r *reader }

// List returns the accounts q selects within the caller's scope (q.Scope is
// overwritten).
func (q *Accounts) List(_ context.Context, c app.Caller, aq readmodel.AccountQuery) (readmodel.List[AccountView], error) {
	aq.Scope = listScope(c)
	l, err := q.r.cfg.Model.ListAccounts(aq)
	if err != nil {
		return readmodel.List[AccountView]{}, listError(err)
	}
	now := q.r.now()
	return readmodel.List[AccountView]{Total: l.Total, Items: func(yield func(AccountView) bool) {
		for a := range l.Items {
			if !yield(q.view(a, now)) {
				return
			}
		}
	}}, nil
}

// Get returns account id: domain.ErrNotFound when there is none (or it was
// deleted), app.ErrForbidden when it belongs to a provider outside the
// caller's scope.
func (q *Accounts) Get(_ context.Context, c app.Caller, id int64) (AccountView, error) {
	a, err := q.Scoped(c, id)
	if err != nil {
		return AccountView{}, err
	}
	return q.view(a, q.r.now()), nil
}

// Scoped returns the read model's account id after the scope check.
func (q *Accounts) Scoped(c app.Caller, id int64) (readmodel.Account, error) {
	a, ok := q.r.cfg.Model.Account(id)
	if !ok {
		return readmodel.Account{}, notFound("account", id)
	}
	if err := c.CheckScope(a.Provider); err != nil {
		return readmodel.Account{}, fmt.Errorf("account %d: %w", id, err)
	}
	return a, nil
}

// Current returns account id as the read model shows it now, without a
// scope check: the answer to a write the caller was allowed to make
// (domain.ErrNotFound when someone deleted it meanwhile).
func (q *Accounts) Current(id int64) (AccountView, error) {
	a, ok := q.r.cfg.Model.Account(id)
	if !ok {
		return AccountView{}, notFound("account", id)
	}
	return q.view(a, q.r.now()), nil
}

// View returns a as the API shows it at the queries' time.
func (q *Accounts) View(a readmodel.Account) AccountView { return q.view(a, q.r.now()) }

func (q *Accounts) view(a readmodel.Account, now time.Time) AccountView {
	v := AccountView{Account: a}
	if a.Enabled {
		for _, sub := range q.r.cfg.Model.AccountSubscriptions(a.ID) {
			if sub.Device == 0 && sub.ActiveAt(now) {
				v.ServicesAvailable = true
				break
			}
		}
	}
	return v
}
