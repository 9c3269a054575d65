package readmodel

import (
	"cmp"
	"fmt"
	"reflect"

	"tvsm/domain"
)

// Answers renders every answer of the model's queries: lists in several
// orders and scopes, and each object by id and by its other keys. Two
// models that give the same answers render alike, so a model restored from
// its snapshot and caught up can be compared with one rebuilt from the log
// (DiffAnswers, Compare).
func Answers(m *Model) (out []any, err error) {
	add := func(name string, v any) { out = append(out, fmt.Sprintf("%s:", name), v) }
	must := func(v any, e error) any {
		err = cmp.Or(err, e)
		return v
	}
	st := m.Stats()
	add("stats", st)
	accounts := must(m.ListAccounts(AccountQuery{Scope: AllProviders})).(List[Account]).Slice()
	add("accounts", accounts)
	for _, sk := range [][]SortKey{{{Field: "login"}}, {{Field: "fullname", Desc: true}}, {{Field: "created"}, {Field: "login", Desc: true}}, {{Field: "id", Desc: true}}} {
		add(fmt.Sprint("accounts sorted ", sk), must(m.ListAccounts(AccountQuery{Scope: AllProviders, Page: Page{Sort: sk, Start: 3, Limit: 50}})).(List[Account]).Slice())
	}
	yes := true
	add("enabled", must(m.ListAccounts(AccountQuery{Scope: AllProviders, Enabled: &yes})).(List[Account]).Total)
	add("search", must(m.ListAccounts(AccountQuery{Scope: AllProviders, QuickSearch: "00"})).(List[Account]).Total)
	for _, a := range accounts {
		v, ok := m.Account(a.ID)
		add("account", []any{v, ok})
		byLogin, ok := m.AccountByLogin(a.Provider, a.Login)
		add("by login", []any{byLogin, ok})
		s, ok := m.AccountState(a.ID)
		add("state", []any{s, ok})
		add("subs of", m.AccountSubscriptions(a.ID))
		add("devs of", m.AccountDevices(a.ID))
	}
	subs := must(m.ListSubscriptions(SubscriptionQuery{Scope: AllProviders})).(List[Subscription]).Slice()
	add("subscriptions", subs)
	add("subscriptions by stop", must(m.ListSubscriptions(SubscriptionQuery{Scope: AllProviders, Page: Page{Sort: []SortKey{{Field: "stop", Desc: true}}}})).(List[Subscription]).Slice())
	for _, s := range subs {
		v, ok := m.Subscription(s.ID)
		add("subscription", []any{v, ok})
	}
	devs := must(m.ListDevices(DeviceQuery{Scope: AllProviders})).(List[Device]).Slice()
	add("devices", devs)
	for _, d := range devs {
		v, ok := m.Device(d.ID)
		add("device", []any{v, ok})
		u, ok := m.DeviceByUniqueID(d.UniqueID)
		add("device by uid", []any{u, ok})
		at, ok := m.DeviceLastOnline(d.ID)
		add("last online", []any{at, ok})
		for _, since := range []uint64{0, st.Position.Commit / 2, st.Position.Commit} {
			add("dropped", m.AuthorizationDropped(d.ID, d.Account, d.Provider, since))
		}
	}
	add("device subscriptions", must(m.ListSubscriptions(SubscriptionQuery{Scope: AllProviders, Devices: true})).(List[Subscription]).Slice())
	add("sends", must(m.ListSends(SendQuery{Scope: AllProviders})).(List[int64]).Slice())
	networks := must(m.ListNetworks(NetworkQuery{Scope: AllProviders})).(List[AccountNetwork]).Slice()
	add("networks", networks)
	for _, n := range networks {
		v, ok := m.AccountNetworkByID(n.ID)
		add("network", []any{v, ok})
	}
	providers := must(m.ListProviders(ProviderQuery{Scope: AllProviders})).(List[domain.Provider]).Slice()
	add("providers", providers)
	for _, p := range providers {
		for _, scope := range []Scope{ProviderScope(p.ID)} {
			add("scoped accounts", must(m.ListAccounts(AccountQuery{Scope: scope})).(List[Account]).Slice())
			add("scoped subs", must(m.ListSubscriptions(SubscriptionQuery{Scope: scope})).(List[Subscription]).Slice())
			add("scoped devs", must(m.ListDevices(DeviceQuery{Scope: scope})).(List[Device]).Slice())
			add("scoped tariffs", must(m.ListTariffs(TariffQuery{Scope: scope})).(List[domain.Tariff]).Slice())
			add("scoped admins", must(m.ListAdmins(AdminQuery{Scope: scope})).(List[domain.Admin]).Slice())
		}
	}
	add("tariffs", must(m.ListTariffs(TariffQuery{Scope: AllProviders})).(List[domain.Tariff]).Slice())
	add("channels", must(m.ListChannels(ChannelQuery{})).(List[domain.Channel]).Slice())
	add("categories", must(m.ListCategories(CategoryQuery{})).(List[domain.Category]).Slice())
	tags := must(m.ListTariffTags(TariffTagQuery{Scope: AllProviders})).(List[domain.TariffTag]).Slice()
	add("tariff tags", tags)
	for _, tag := range tags {
		add("tagged", m.TariffsTagged(tag.ID))
	}
	regions := must(m.ListRegions(RegionQuery{})).(List[domain.Region]).Slice()
	add("regions", regions)
	for _, r := range regions {
		add("in region", m.ProvidersInRegion(r.ID))
	}
	add("device types", must(m.ListDeviceTypes(DeviceTypeQuery{})).(List[domain.DeviceType]).Slice())
	admins := must(m.ListAdmins(AdminQuery{Scope: AllProviders})).(List[domain.Admin]).Slice()
	add("admins", admins)
	for _, a := range admins {
		v, ok := m.Admin(a.Login)
		add("admin", []any{v, ok})
	}
	return out, err
}

// DiffAnswers reports the first difference between two renderings of
// Answers, nil when they are the same.
func DiffAnswers(want, got []any) error {
	if len(want) != len(got) {
		return fmt.Errorf("readmodel: answers differ in length: %d vs %d", len(want), len(got))
	}
	for i := range want {
		if !reflect.DeepEqual(want[i], got[i]) {
			return fmt.Errorf("readmodel: answers differ at %v:\nwant %+v\ngot  %+v", want[max(i-1, 0)], want[i], got[i])
		}
	}
	return nil
}

// Compare reports the first answer in which got differs from want, nil
// when they answer every query alike.
func Compare(want, got *Model) error {
	w, err := Answers(want)
	if err != nil {
		return err
	}
	g, err := Answers(got)
	if err != nil {
		return err
	}
	return DiffAnswers(w, g)
}
