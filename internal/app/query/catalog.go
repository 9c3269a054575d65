package query

import (
	"context"
	"fmt"
	"slices"

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

// TariffTags answers the reads of tariff tags; a provider-scoped admin sees
// only its own provider's.
type TariffTags = resource[domain.TariffTag, readmodel.TariffTagQuery]

// Channels and Categories answer the reads of the operator's line-up:
// channels and their categories belong to no provider, and every admin may
// read them. A provider-scoped admin lists the channels of its own
// provider's tariffs only (another's tariff lists none).
type (
	Channels   = resource[domain.Channel, readmodel.ChannelQuery]
	Categories = resource[domain.Category, readmodel.CategoryQuery]
)

// Regions and DeviceTypes answer the reads of the global catalog every
// admin may read.
type (
	Regions     = resource[domain.Region, readmodel.RegionQuery]
	DeviceTypes = resource[domain.DeviceType, readmodel.DeviceTypeQuery]
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

func newTariffTags(r *reader) *TariffTags {
	return &TariffTags{r: r, what: "tariff tag", list: (*readmodel.Model).ListTariffTags, get: (*readmodel.Model).TariffTag,
		scoped: func(q readmodel.TariffTagQuery, s readmodel.Scope) readmodel.TariffTagQuery { q.Scope = s; return q },
		allowed: func(c app.Caller, id int64, t domain.TariffTag, found bool) error {
			return providerOf(c, "tariff tag", id, t.Provider, found)
		},
	}
}

func newChannels(r *reader) *Channels {
	return &Channels{r: r, what: "channel", list: (*readmodel.Model).ListChannels, get: (*readmodel.Model).Channel,
		scoped: func(q readmodel.ChannelQuery, s readmodel.Scope) readmodel.ChannelQuery { q.Scope = s; return q }}
}

func newCategories(r *reader) *Categories {
	return &Categories{r: r, what: "category", list: (*readmodel.Model).ListCategories, get: (*readmodel.Model).Category}
}

func newRegions(r *reader) *Regions {
	return &Regions{r: r, what: "region", list: (*readmodel.Model).ListRegions, get: (*readmodel.Model).Region}
}

func newDeviceTypes(r *reader) *DeviceTypes {
	return &DeviceTypes{r: r, what: "device type", list: (*readmodel.Model).ListDeviceTypes, get: (*readmodel.Model).DeviceType}
}

// Mapped answers the reads of a resource with every page (and every single
// object) passed through mapPage: the Provider API's view of an object that
// needs more of the read model than the object itself.
type Mapped[T, U, Q any] struct {
	reads   *resource[T, Q]
	mapPage func(m *readmodel.Model, page []T) []U
}

// List lists the objects q selects that the caller may see, mapped.
func (q *Mapped[T, U, Q]) List(ctx context.Context, c app.Caller, lq Q) (readmodel.List[U], error) {
	l, err := q.reads.List(ctx, c, lq)
	if err != nil {
		return readmodel.List[U]{}, err
	}
	return readmodel.List[U]{Total: l.Total, Items: slices.Values(q.mapPage(q.reads.r.cfg.Model, l.Slice()))}, nil
}

// Get returns object id, mapped.
func (q *Mapped[T, U, Q]) Get(ctx context.Context, c app.Caller, id int64) (U, error) {
	v, err := q.reads.Get(ctx, c, id)
	if err != nil {
		var zero U
		return zero, err
	}
	return q.mapPage(q.reads.r.cfg.Model, []T{v})[0], nil
}

// FavoriteGroup is a channel category as the Provider API's favourite
// groups show it: with the live channels that list it.
type FavoriteGroup struct {
	domain.Category
	Channels []int64 // ascending
}

// FavoriteGroups answers the reads of channel categories with their
// channels; every admin may read them.
type FavoriteGroups = Mapped[domain.Category, FavoriteGroup, readmodel.CategoryQuery]

func newFavoriteGroups(categories *Categories) *FavoriteGroups {
	return &FavoriteGroups{reads: categories, mapPage: func(m *readmodel.Model, page []domain.Category) []FavoriteGroup {
		ids := make([]int64, len(page))
		for i, cat := range page {
			ids[i] = cat.ID
		}
		channels := m.CategoryChannels(ids)
		groups := make([]FavoriteGroup, len(page))
		for i, cat := range page {
			groups[i] = FavoriteGroup{Category: cat, Channels: channels[cat.ID]}
		}
		return groups
	}}
}

// LineUp answers the Provider API's reads of channels: Channels, with the
// categories that no longer exist left out of each channel's list (the
// Admin API shows the list as stored, which a resync re-sends).
type LineUp = Mapped[domain.Channel, domain.Channel, readmodel.ChannelQuery]

func newLineUp(channels *Channels) *LineUp {
	return &LineUp{reads: channels, mapPage: func(m *readmodel.Model, page []domain.Channel) []domain.Channel {
		for i := range page {
			page[i].Categories = m.LiveCategories(page[i].Categories)
		}
		return page
	}}
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
