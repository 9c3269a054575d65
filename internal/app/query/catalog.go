package query

import (
	"context"
	"fmt"

	"tvsm/domain"
	"tvsm/internal/app"
	"tvsm/projections/readmodel"
)

// resource answers the reads of one kind of object of the read model keyed
// by an integer id: a list within the caller's scope, and one object.
type resource[T, Q any] struct {
	r    *reader
	what string // "tariff", in errors
	list func(*readmodel.Model, Q) (readmodel.List[T], error)
	get  func(*readmodel.Model, int64) (T, bool)
	// scoped returns a list query limited to scope; nil when every admin
	// sees every object (channels, categories).
	scoped func(Q, readmodel.Scope) Q
	// allowed reports whether c may read object id (found says whether it
	// exists); nil when every admin may.
	allowed func(c app.Caller, id int64, v T, found bool) error
}

// List lists the objects q selects that the caller may see (q's scope is
// overwritten).
func (q *resource[T, Q]) List(_ context.Context, c app.Caller, lq Q) (readmodel.List[T], error) {
	if q.scoped != nil {
		lq = q.scoped(lq, listScope(c))
	}
	l, err := q.list(q.r.cfg.Model, lq)
	return l, listError(err)
}

// Get returns object id: domain.ErrNotFound when there is none (or it was
// deleted), app.ErrForbidden when the caller may not see it.
func (q *resource[T, Q]) Get(_ context.Context, c app.Caller, id int64) (T, error) {
	v, found := q.get(q.r.cfg.Model, id)
	if q.allowed != nil {
		if err := q.allowed(c, id, v, found); err != nil {
			var zero T
			return zero, err
		}
	}
	if !found {
		return v, notFound(q.what, id)
	}
	return v, nil
}

// Current returns object id as the read model shows it now, without a
// scope check: the answer to a write the caller was allowed to make
// (domain.ErrNotFound when someone deleted it meanwhile).
func (q *resource[T, Q]) Current(id int64) (T, error) {
	v, found := q.get(q.r.cfg.Model, id)
	if !found {
		return v, notFound(q.what, id)
	}
	return v, nil
}

// Providers answers the reads of providers. A provider-scoped admin sees
// only its own provider, and is refused any other id, existing or not. A
// provider's Billing.Token is a secret: never show it.
type Providers = resource[domain.Provider, readmodel.ProviderQuery]

// Tariffs answers the reads of tariffs; a provider-scoped admin sees only
// its own provider's.
type Tariffs = resource[domain.Tariff, readmodel.TariffQuery]

// Channels and Categories answer the reads of the operator's line-up:
// channels and their categories belong to no provider, and every admin may
// read them.
type (
	Channels   = resource[domain.Channel, readmodel.ChannelQuery]
	Categories = resource[domain.Category, readmodel.CategoryQuery]
)

// Subscriptions answers the reads of account subscriptions (an account's
// own), DeviceSubscriptions those of the devices' own subscriptions,
// Devices those of bound devices and Networks those of account networks. A
// provider-scoped admin sees its provider's only.
type (
	Subscriptions       = resource[readmodel.Subscription, readmodel.SubscriptionQuery]
	DeviceSubscriptions = resource[readmodel.Subscription, readmodel.SubscriptionQuery]
	Devices             = resource[readmodel.Device, readmodel.DeviceQuery]
	Networks            = resource[readmodel.AccountNetwork, readmodel.NetworkQuery]
)

func newProviders(r *reader) *Providers {
	return &Providers{r: r, what: "provider", list: (*readmodel.Model).ListProviders, get: (*readmodel.Model).Provider,
		scoped:  func(q readmodel.ProviderQuery, s readmodel.Scope) readmodel.ProviderQuery { q.Scope = s; return q },
		allowed: func(c app.Caller, id int64, _ domain.Provider, _ bool) error { return c.CheckScope(id) },
	}
}

func newTariffs(r *reader) *Tariffs {
	return &Tariffs{r: r, what: "tariff", list: (*readmodel.Model).ListTariffs, get: (*readmodel.Model).Tariff,
		scoped: func(q readmodel.TariffQuery, s readmodel.Scope) readmodel.TariffQuery { q.Scope = s; return q },
		allowed: func(c app.Caller, _ int64, t domain.Tariff, found bool) error {
			if !found {
				return nil
			}
			return c.CheckScope(t.Provider)
		},
	}
}

func newChannels(r *reader) *Channels {
	return &Channels{r: r, what: "channel", list: (*readmodel.Model).ListChannels, get: (*readmodel.Model).Channel}
}

func newCategories(r *reader) *Categories {
	return &Categories{r: r, what: "category", list: (*readmodel.Model).ListCategories, get: (*readmodel.Model).Category}
}

// newSubscriptions returns the reads of account subscriptions (devices
// false) or of device subscriptions (devices true): one kind's ids are not
// found as the other's.
func newSubscriptions(r *reader, devices bool) *Subscriptions {
	what := "subscription"
	if devices {
		what = "device subscription"
	}
	return &Subscriptions{r: r, what: what, list: (*readmodel.Model).ListSubscriptions,
		get: func(m *readmodel.Model, id int64) (readmodel.Subscription, bool) {
			s, ok := m.Subscription(id)
			return s, ok && (s.Device != 0) == devices
		},
		scoped: func(q readmodel.SubscriptionQuery, s readmodel.Scope) readmodel.SubscriptionQuery {
			q.Scope, q.Devices = s, devices
			return q
		},
		allowed: func(c app.Caller, id int64, sub readmodel.Subscription, found bool) error {
			return providerOf(c, what, id, sub.Provider, found)
		},
	}
}

func newNetworks(r *reader) *Networks {
	return &Networks{r: r, what: "account network", list: (*readmodel.Model).ListNetworks, get: (*readmodel.Model).AccountNetworkByID,
		scoped: func(q readmodel.NetworkQuery, s readmodel.Scope) readmodel.NetworkQuery { q.Scope = s; return q },
		allowed: func(c app.Caller, id int64, n readmodel.AccountNetwork, found bool) error {
			return providerOf(c, "account network", id, n.Provider, found)
		},
	}
}

func newDevices(r *reader) *Devices {
	return &Devices{r: r, what: "device", list: (*readmodel.Model).ListDevices, get: (*readmodel.Model).Device,
		scoped: func(q readmodel.DeviceQuery, s readmodel.Scope) readmodel.DeviceQuery { q.Scope = s; return q },
		allowed: func(c app.Caller, id int64, d readmodel.Device, found bool) error {
			return providerOf(c, "device", id, d.Provider, found)
		},
	}
}

// providerOf checks that c may see object what id of provider, when it
// exists, naming the object in the error.
func providerOf(c app.Caller, what string, id, provider int64, found bool) error {
	if !found {
		return nil
	}
	if err := c.CheckScope(provider); err != nil {
		return fmt.Errorf("%s %d: %w", what, id, err)
	}
	return nil
}

// Admins answers the reads of administrators. The results carry password
// hashes: never show them.
type Admins struct{ r *reader }

// List lists the administrators q selects. A provider-scoped admin sees the
// admins of its own provider only (never superadmins).
func (q *Admins) List(_ context.Context, c app.Caller, aq readmodel.AdminQuery) (readmodel.List[domain.Admin], error) {
	aq.Scope = listScope(c)
	l, err := q.r.cfg.Model.ListAdmins(aq)
	return l, listError(err)
}

// Get returns the administrator login. A provider-scoped admin may read
// itself and the admins of its own provider; others are app.ErrForbidden.
func (q *Admins) Get(_ context.Context, c app.Caller, login string) (domain.Admin, error) {
	a, err := q.Current(login)
	if err != nil {
		return domain.Admin{}, err
	}
	if err := readable(c, a); err != nil {
		return domain.Admin{}, err
	}
	return a, nil
}

// Current returns admin login without a scope check (see
// Providers.Current).
func (q *Admins) Current(login string) (domain.Admin, error) {
	a, ok := q.r.cfg.Model.Admin(login)
	if !ok {
		return domain.Admin{}, notFound("admin", login)
	}
	return a, nil
}

// readable reports whether caller c may see admin a.
func readable(c app.Caller, a domain.Admin) error {
	switch {
	case c.Scope == nil, a.Login == c.Admin:
		return nil
	case a.Provider == nil:
		return fmt.Errorf("superadmin %q: %w", a.Login, app.ErrForbidden)
	}
	return c.CheckScope(*a.Provider)
}
