package readmodel

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"tvsm/domain"
)

// listEnv is a store with two providers, their tariffs and accounts:
// provider 1 has 12 accounts, provider 2 has 5.
type listEnv struct {
	*env
	m    *Model
	r    *runner
	acc1 []int64 // provider 1's account ids, ascending
	acc2 []int64
}

var fullnames = []string{"Zoe Adams", "yuri gagarin", "Xavier Brown", "Wanda Maximoff", "Вера Павловна", "ursula K. Le Guin"}

func newListEnv(t *testing.T) *listEnv {
	t.Helper()
	e := newEnv(t)
	le := &listEnv{env: e, m: New(e.reg)}
	le.r = e.run(le.m, Beginning)
	e.provider(domain.CreateProvider{ID: 1, Name: "One"})
	e.provider(domain.CreateProvider{ID: 2, Name: "Two", Enabled: ptr(false)})
	e.tariff(domain.CreateTariff{ID: 11, Provider: 1, Name: "Basic"})
	e.tariff(domain.CreateTariff{ID: 12, Provider: 1, Name: "Premium"})
	e.tariff(domain.CreateTariff{ID: 21, Provider: 2, Name: "Alpha"})
	e.admin(domain.CreateAdmin{Login: "root", PasswordHash: bcryptLike("r")})
	e.admin(domain.CreateAdmin{Login: "one", PasswordHash: bcryptLike("1"), Provider: ptr(int64(1))})
	e.admin(domain.CreateAdmin{Login: "two", PasswordHash: bcryptLike("2"), Provider: ptr(int64(2))})
	for i := range 12 {
		id := e.newAccount(1, fmt.Sprintf("p1-user%02d", i), fullnames[i%len(fullnames)], func(c *domain.CreateAccount) {
			c.Enabled = ptr(i%3 != 0)
			c.ContractInfo = ptr(fmt.Sprintf("Contract-%d", 1000+i))
			if i%4 == 0 {
				c.RemoteCustomField = ptr("crm-a")
			}
		})
		le.acc1 = append(le.acc1, id)
		tariff := int64(11 + i%2)
		e.account(domain.AddSubscription{AccountID: id, SubscriptionID: e.nextID("subscription"), Tariff: tariff, TariffProvider: 1,
			Start: base.Add(time.Duration(i) * time.Hour)})
		e.account(domain.BindDevice{AccountID: id, DeviceID: e.nextID("device"), UniqueID: fmt.Sprintf("dev-1-%02d", i), Class: domain.DeviceSTB})
	}
	for i := range 5 {
		id := e.newAccount(2, fmt.Sprintf("p2-user%02d", i), "Second Provider "+fullnames[i], func(c *domain.CreateAccount) {
			c.RemoteCustomField = ptr("crm-a")
		})
		le.acc2 = append(le.acc2, id)
		e.account(domain.AddSubscription{AccountID: id, SubscriptionID: e.nextID("subscription"), Tariff: 21, TariffProvider: 2, Start: base})
		e.account(domain.BindDevice{AccountID: id, DeviceID: e.nextID("device"), UniqueID: fmt.Sprintf("dev-2-%02d", i), Class: domain.DeviceTV})
	}
	le.r.sync()
	return le
}

func ids[T any](l List[T], id func(T) int64) []int64 {
	var out []int64
	for v := range l.Items {
		out = append(out, id(v))
	}
	return out
}

func accountIDs(l List[Account]) []int64 { return ids(l, func(a Account) int64 { return a.ID }) }

func TestListAccounts(t *testing.T) {
	le := newListEnv(t)
	m := le.m
	all := append(slices.Clone(le.acc1), le.acc2...)
	yes, no := true, false
	crm := "crm-a"

	cases := []struct {
		name      string
		q         AccountQuery
		wantTotal int
		want      []int64 // the page; nil: check only the total
	}{
		{"everything", AccountQuery{Scope: AllProviders}, 17, all},
		{"provider filter", AccountQuery{Scope: AllProviders, Provider: 2}, 5, le.acc2},
		{"unknown provider", AccountQuery{Scope: AllProviders, Provider: 9}, 0, nil},
		{"page", AccountQuery{Scope: AllProviders, Page: Page{Start: 10, Limit: 4}}, 17, all[10:14]},
		{"last page", AccountQuery{Scope: AllProviders, Page: Page{Start: 15, Limit: 4}}, 17, all[15:]},
		{"beyond the end", AccountQuery{Scope: AllProviders, Page: Page{Start: 40, Limit: 4}}, 17, nil},
		{"limit 0 means all", AccountQuery{Scope: AllProviders, Page: Page{Start: 2}}, 17, all[2:]},
		{"id descending", AccountQuery{Scope: AllProviders, Page: Page{Limit: 3, Sort: []SortKey{{Field: "id", Desc: true}}}}, 17, []int64{all[16], all[15], all[14]}},
		{"id descending, skipping", AccountQuery{Scope: AllProviders, Page: Page{Start: 15, Sort: []SortKey{{Field: "id", Desc: true}}}}, 17, []int64{all[1], all[0]}},
		{"enabled", AccountQuery{Scope: AllProviders, Provider: 1, Enabled: &yes}, 8, []int64{le.acc1[1], le.acc1[2], le.acc1[4], le.acc1[5], le.acc1[7], le.acc1[8], le.acc1[10], le.acc1[11]}},
		{"disabled, paged", AccountQuery{Scope: AllProviders, Enabled: &no, Page: Page{Start: 1, Limit: 2}}, 4, []int64{le.acc1[3], le.acc1[6]}},
		{"login", AccountQuery{Scope: AllProviders, Login: "p1-user05"}, 1, []int64{le.acc1[5]}},
		{"login of another provider", AccountQuery{Scope: AllProviders, Provider: 2, Login: "p1-user05"}, 0, nil},
		{"login and disabled", AccountQuery{Scope: AllProviders, Login: "p1-user05", Enabled: &no}, 0, nil},
		{"login is exact", AccountQuery{Scope: AllProviders, Login: "P1-USER05"}, 0, nil},
		{"remote_custom_field", AccountQuery{Scope: AllProviders, Provider: 1, RemoteCustomField: &crm}, 3, []int64{le.acc1[0], le.acc1[4], le.acc1[8]}},
		{"quick_search login", AccountQuery{Scope: AllProviders, QuickSearch: "P2-USER0"}, 5, le.acc2},
		{"quick_search fullname, any case", AccountQuery{Scope: AllProviders, Provider: 1, QuickSearch: "GAGARIN"}, 2, []int64{le.acc1[1], le.acc1[7]}},
		{"quick_search Cyrillic", AccountQuery{Scope: AllProviders, QuickSearch: "вЕРА"}, 3, []int64{le.acc1[4], le.acc1[10], le.acc2[4]}},
		{"quick_search contract_info", AccountQuery{Scope: AllProviders, QuickSearch: "contract-1011"}, 1, []int64{le.acc1[11]}},
		{"quick_search no match", AccountQuery{Scope: AllProviders, QuickSearch: "nobody"}, 0, nil},
		{"zero scope sees nothing", AccountQuery{}, 0, nil},
		{"scoped", AccountQuery{Scope: ProviderScope(2)}, 5, le.acc2},
		{"scoped, other provider's filter", AccountQuery{Scope: ProviderScope(2), Provider: 1}, 0, nil},
		{"scoped, other provider's login", AccountQuery{Scope: ProviderScope(2), Login: "p1-user01"}, 0, nil},
		{"scoped search", AccountQuery{Scope: ProviderScope(1), QuickSearch: "user"}, 12, le.acc1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := m.ListAccounts(c.q)
			if err != nil {
				t.Fatal(err)
			}
			if l.Total != c.wantTotal {
				t.Errorf("total %d, want %d", l.Total, c.wantTotal)
			}
			if got := accountIDs(l); !slices.Equal(got, c.want) {
				t.Errorf("page %v, want %v", got, c.want)
			}
		})
	}
}

func TestListAccountsSorted(t *testing.T) {
	le := newListEnv(t)
	m := le.m
	check := func(name string, q AccountQuery, key func(Account) string, desc bool) {
		t.Helper()
		l, err := m.ListAccounts(q)
		if err != nil {
			t.Fatal(err)
		}
		items := l.Slice()
		for i := 1; i < len(items); i++ {
			a, b := key(items[i-1]), key(items[i])
			if desc {
				a, b = b, a
			}
			if a > b || (a == b && items[i-1].ID > items[i].ID) {
				t.Errorf("%s: %q (id %d) before %q (id %d)", name, key(items[i-1]), items[i-1].ID, key(items[i]), items[i].ID)
			}
		}
	}
	login := func(a Account) string { return a.Login }
	fullname := func(a Account) string { return a.Fullname }
	check("login", AccountQuery{Scope: AllProviders, Page: Page{Sort: []SortKey{{Field: "login"}}}}, login, false)
	check("login desc", AccountQuery{Scope: AllProviders, Page: Page{Sort: []SortKey{{Field: "login", Desc: true}}}}, login, true)
	check("fullname", AccountQuery{Scope: ProviderScope(1), Page: Page{Sort: []SortKey{{Field: "fullname"}}}}, fullname, false)
	check("fullname desc, enabled", AccountQuery{Scope: AllProviders, Enabled: ptr(true), Page: Page{Sort: []SortKey{{Field: "fullname", Desc: true}}}}, fullname, true)

	// Ties (same fullname) keep ascending ids, so pages never overlap.
	q := AccountQuery{Scope: AllProviders, Provider: 1, Page: Page{Sort: []SortKey{{Field: "fullname"}}}}
	whole := accountIDs(must(m.ListAccounts(q)))
	var paged []int64
	for start := 0; start < len(whole); start += 5 {
		q.Page.Start, q.Page.Limit = start, 5
		l := must(m.ListAccounts(q))
		if l.Total != 12 {
			t.Fatalf("total %d", l.Total)
		}
		paged = append(paged, accountIDs(l)...)
	}
	if !slices.Equal(paged, whole) {
		t.Errorf("pages %v, whole %v", paged, whole)
	}

	// Created (the clock ticks per command), then login descending.
	l := must(m.ListAccounts(AccountQuery{Scope: AllProviders, Page: Page{Sort: []SortKey{{Field: "created", Desc: true}}, Limit: 1}}))
	if got := accountIDs(l); !slices.Equal(got, []int64{le.acc2[4]}) {
		t.Errorf("newest account %v, want %d", got, le.acc2[4])
	}

	if _, err := m.ListAccounts(AccountQuery{Scope: AllProviders, Page: Page{Sort: []SortKey{{Field: "pin_md5"}}}}); !errors.Is(err, ErrUnknownSortField) {
		t.Errorf("unknown sort field: %v", err)
	}
}

func TestListSubscriptionsAndDevices(t *testing.T) {
	le := newListEnv(t)
	m := le.m

	all := must(m.ListSubscriptions(SubscriptionQuery{Scope: AllProviders}))
	if all.Total != 17 {
		t.Fatalf("subscriptions: %d", all.Total)
	}
	subIDs := ids(all, func(s Subscription) int64 { return s.ID })
	if !slices.IsSorted(subIDs) {
		t.Errorf("subscriptions not in id order: %v", subIDs)
	}
	byTariff := must(m.ListSubscriptions(SubscriptionQuery{Scope: AllProviders, Tariff: 12}))
	if byTariff.Total != 6 {
		t.Errorf("tariff 12: %d subscriptions", byTariff.Total)
	}
	for s := range byTariff.Items {
		if s.Tariff != 12 || s.Provider != 1 {
			t.Errorf("tariff filter gave %+v", s)
		}
	}
	acc := le.acc1[3]
	of := must(m.ListSubscriptions(SubscriptionQuery{Scope: AllProviders, Account: acc})).Slice()
	if len(of) != 1 || of[0].Account != acc {
		t.Errorf("subscriptions of %d: %+v", acc, of)
	}
	if l := must(m.ListSubscriptions(SubscriptionQuery{Scope: ProviderScope(2), Account: acc})); l.Total != 0 {
		t.Errorf("another provider's account's subscriptions visible: %+v", l.Slice())
	}
	if l := must(m.ListSubscriptions(SubscriptionQuery{Scope: ProviderScope(2)})); l.Total != 5 {
		t.Errorf("scoped subscriptions: %d", l.Total)
	}
	paged := must(m.ListSubscriptions(SubscriptionQuery{Scope: AllProviders, Tariff: 11, Page: Page{Start: 2, Limit: 2}}))
	if paged.Total != 6 || len(paged.Slice()) != 2 {
		t.Errorf("paged tariff filter: total %d, %d items", paged.Total, len(paged.Slice()))
	}
	byStart := must(m.ListSubscriptions(SubscriptionQuery{Scope: ProviderScope(1), Page: Page{Sort: []SortKey{{Field: "start", Desc: true}}}})).Slice()
	for i := 1; i < len(byStart); i++ {
		if byStart[i-1].Start.Before(byStart[i].Start) {
			t.Fatalf("not sorted by start descending: %v before %v", byStart[i-1].Start, byStart[i].Start)
		}
	}

	// End one subscription: sorted by stop, open ones come last.
	s0 := of[0]
	stop := s0.Start.Add(24 * time.Hour)
	le.account(domain.UpdateSubscription{AccountID: acc, SubscriptionID: s0.ID, Stop: domain.Some(stop)})
	le.r.sync()
	byStop := must(m.ListSubscriptions(SubscriptionQuery{Scope: AllProviders, Page: Page{Sort: []SortKey{{Field: "stop"}}, Limit: 1}})).Slice()
	if len(byStop) != 1 || byStop[0].ID != s0.ID || !byStop[0].Stop.Equal(stop) {
		t.Errorf("first by stop: %+v", byStop)
	}

	// Devices.
	devs := must(m.ListDevices(DeviceQuery{Scope: AllProviders}))
	if devs.Total != 17 {
		t.Fatalf("devices: %d", devs.Total)
	}
	if l := must(m.ListDevices(DeviceQuery{Scope: AllProviders, Provider: 2})); l.Total != 5 {
		t.Errorf("provider 2's devices: %d", l.Total)
	}
	if l := must(m.ListDevices(DeviceQuery{Scope: AllProviders, UniqueID: "dev-1-07"})).Slice(); len(l) != 1 || l[0].Account != le.acc1[7] {
		t.Errorf("device by unique id: %+v", l)
	}
	if l := must(m.ListDevices(DeviceQuery{Scope: ProviderScope(2), UniqueID: "dev-1-07"})); l.Total != 0 {
		t.Error("another provider's device found by unique id")
	}
	if l := must(m.ListDevices(DeviceQuery{Scope: AllProviders, Account: le.acc2[1]})).Slice(); len(l) != 1 || l[0].UniqueID != "dev-2-01" {
		t.Errorf("devices of an account: %+v", l)
	}
	if l := must(m.ListDevices(DeviceQuery{Scope: ProviderScope(1), Account: le.acc2[1]})); l.Total != 0 {
		t.Error("another provider's account's devices visible")
	}
	byUID := must(m.ListDevices(DeviceQuery{Scope: AllProviders, Page: Page{Sort: []SortKey{{Field: "unique_id", Desc: true}}, Limit: 2}})).Slice()
	if len(byUID) != 2 || byUID[0].UniqueID != "dev-2-04" || byUID[1].UniqueID != "dev-2-03" {
		t.Errorf("devices by unique id descending: %+v", byUID)
	}

	// Unbinding and binding again.
	d := must(m.ListDevices(DeviceQuery{Scope: AllProviders, Account: le.acc1[0]})).Slice()[0]
	le.account(domain.UnbindDevice{AccountID: le.acc1[0], DeviceID: d.ID})
	newDev := le.nextID("device")
	le.account(domain.BindDevice{AccountID: le.acc1[1], DeviceID: newDev, UniqueID: d.UniqueID, Class: domain.DeviceWeb})
	le.r.sync()
	if got, ok := m.DeviceByUniqueID(d.UniqueID); !ok || got.ID != newDev || got.Account != le.acc1[1] || got.Class != domain.DeviceWeb {
		t.Errorf("re-bound device: %+v, %v", got, ok)
	}
	if l := must(m.ListDevices(DeviceQuery{Scope: AllProviders, Account: le.acc1[1]})); l.Total != 2 {
		t.Errorf("account with two devices lists %d", l.Total)
	}
}

func TestListCatalogAndScope(t *testing.T) {
	le := newListEnv(t)
	m := le.m
	le.category(domain.CreateCategory{ID: 1, Name: "News"})
	le.channel(domain.CreateChannel{ID: 5, Name: "B", Number: 2, Categories: []int64{1}})
	le.channel(domain.CreateChannel{ID: 6, Name: "A", Number: 3})
	le.r.sync()

	provs := func(s Scope) []int64 {
		return ids(must(m.ListProviders(ProviderQuery{Scope: s})), func(p domain.Provider) int64 { return p.ID })
	}
	if got := provs(AllProviders); !slices.Equal(got, []int64{1, 2}) {
		t.Errorf("providers %v", got)
	}
	if got := provs(ProviderScope(2)); !slices.Equal(got, []int64{2}) {
		t.Errorf("scoped providers %v", got)
	}
	if got := provs(Scope{}); len(got) != 0 {
		t.Errorf("zero scope providers %v", got)
	}
	if got := ids(must(m.ListProviders(ProviderQuery{Scope: AllProviders, Enabled: ptr(false)})), func(p domain.Provider) int64 { return p.ID }); !slices.Equal(got, []int64{2}) {
		t.Errorf("disabled providers %v", got)
	}

	tariffs := func(q TariffQuery) []int64 {
		return ids(must(m.ListTariffs(q)), func(t domain.Tariff) int64 { return t.ID })
	}
	if got := tariffs(TariffQuery{Scope: AllProviders}); !slices.Equal(got, []int64{11, 12, 21}) {
		t.Errorf("tariffs %v", got)
	}
	if got := tariffs(TariffQuery{Scope: ProviderScope(1), Page: Page{Sort: []SortKey{{Field: "name", Desc: true}}}}); !slices.Equal(got, []int64{12, 11}) {
		t.Errorf("scoped tariffs by name desc %v", got)
	}
	if got := tariffs(TariffQuery{Scope: ProviderScope(1), Provider: 2}); len(got) != 0 {
		t.Errorf("scope 1 with provider filter 2: %v", got)
	}

	chans := func(q ChannelQuery) []int64 {
		return ids(must(m.ListChannels(q)), func(c domain.Channel) int64 { return c.ID })
	}
	if got := chans(ChannelQuery{Page: Page{Sort: []SortKey{{Field: "name"}}}}); !slices.Equal(got, []int64{6, 5}) {
		t.Errorf("channels by name %v", got)
	}
	if got := chans(ChannelQuery{Category: 1}); !slices.Equal(got, []int64{5}) {
		t.Errorf("channels of category 1 %v", got)
	}
	if l := must(m.ListCategories(CategoryQuery{})); l.Total != 1 {
		t.Errorf("categories %d", l.Total)
	}

	admins := func(q AdminQuery) []string {
		var out []string
		for a := range must(m.ListAdmins(q)).Items {
			out = append(out, a.Login)
		}
		return out
	}
	if got := admins(AdminQuery{Scope: AllProviders}); !slices.Equal(got, []string{"one", "root", "two"}) {
		t.Errorf("admins %v", got)
	}
	if got := admins(AdminQuery{Scope: ProviderScope(1)}); !slices.Equal(got, []string{"one"}) {
		t.Errorf("provider 1's admins %v", got)
	}
	if got := admins(AdminQuery{Scope: AllProviders, Page: Page{Sort: []SortKey{{Field: "provider", Desc: true}}}}); !slices.Equal(got, []string{"two", "one", "root"}) {
		t.Errorf("admins by provider desc %v", got)
	}
}

// TestScopeIsolation runs every list in each provider's scope and checks
// that no row of another provider comes back.
func TestScopeIsolation(t *testing.T) {
	le := newListEnv(t)
	m := le.m
	for _, p := range []int64{1, 2} {
		s := ProviderScope(p)
		for a := range must(m.ListAccounts(AccountQuery{Scope: s, Page: Page{Sort: []SortKey{{Field: "login"}}}})).Items {
			if a.Provider != p {
				t.Errorf("scope %d: account %+v", p, a)
			}
		}
		for x := range must(m.ListSubscriptions(SubscriptionQuery{Scope: s, Page: Page{Sort: []SortKey{{Field: "tarif"}}}})).Items {
			if x.Provider != p {
				t.Errorf("scope %d: subscription %+v", p, x)
			}
		}
		for _, tariff := range []int64{11, 21} {
			for x := range must(m.ListSubscriptions(SubscriptionQuery{Scope: s, Tariff: tariff})).Items {
				if x.Provider != p {
					t.Errorf("scope %d: subscription %+v", p, x)
				}
			}
		}
		for x := range must(m.ListDevices(DeviceQuery{Scope: s, Page: Page{Sort: []SortKey{{Field: "created"}}}})).Items {
			if x.Provider != p {
				t.Errorf("scope %d: device %+v", p, x)
			}
		}
		for x := range must(m.ListTariffs(TariffQuery{Scope: s})).Items {
			if x.Provider != p {
				t.Errorf("scope %d: tariff %+v", p, x)
			}
		}
		for x := range must(m.ListProviders(ProviderQuery{Scope: s})).Items {
			if x.ID != p {
				t.Errorf("scope %d: provider %+v", p, x)
			}
		}
		for x := range must(m.ListAdmins(AdminQuery{Scope: s})).Items {
			if x.Provider == nil || *x.Provider != p {
				t.Errorf("scope %d: admin %+v", p, x)
			}
		}
	}
	// The zero scope matches nothing anywhere.
	var zero Scope
	if must(m.ListAccounts(AccountQuery{Scope: zero})).Total+must(m.ListSubscriptions(SubscriptionQuery{Scope: zero})).Total+
		must(m.ListDevices(DeviceQuery{Scope: zero})).Total+must(m.ListTariffs(TariffQuery{Scope: zero})).Total+
		must(m.ListProviders(ProviderQuery{Scope: zero})).Total+must(m.ListAdmins(AdminQuery{Scope: zero})).Total != 0 {
		t.Error("the zero Scope matched rows")
	}
}

// TestListCatalogFilters covers the filters and searches the Provider
// API's catalog lists use: each one narrows the list.
func TestListCatalogFilters(t *testing.T) {
	le := newListEnv(t)
	m := le.m
	le.category(domain.CreateCategory{ID: 1, Name: "News"})
	le.category(domain.CreateCategory{ID: 2, Name: "Sport"})
	le.channel(domain.CreateChannel{ID: 5, Name: "Euronews", Number: 2, Categories: []int64{1}})
	le.channel(domain.CreateChannel{ID: 6, Name: "Match", TextName: "Match! Premier", Number: 3, Categories: []int64{2, 1}, Enabled: ptr(false)})
	le.channel(domain.CreateChannel{ID: 7, Name: "Gone", Categories: []int64{2}})
	le.channel(domain.DeleteChannel{ID: 7})
	le.tariff(domain.UpdateTariff{ID: 11, Channels: domain.Some([]int64{5, 6})})
	le.tariff(domain.UpdateTariff{ID: 12, Channels: domain.Some([]int64{6})})
	le.env.provider(domain.UpdateProvider{ID: 1, RegionTag: domain.Some(int64(3))})
	execute(le.env, domain.RegionStream(3), domain.RegionDecider(), domain.RegionCommand(domain.CreateRegion{ID: 3, Name: "North-West"}))
	execute(le.env, domain.RegionStream(4), domain.RegionDecider(), domain.RegionCommand(domain.CreateRegion{ID: 4, Name: "South"}))
	execute(le.env, domain.DeviceTypeStream(1), domain.DeviceTypeDecider(), domain.DeviceTypeCommand(domain.CreateDeviceType{ID: 1, Name: "tvip_s605"}))
	execute(le.env, domain.DeviceTypeStream(2), domain.DeviceTypeDecider(), domain.DeviceTypeCommand(domain.CreateDeviceType{ID: 2, Name: "Android TV"}))
	tag := func(c domain.TariffTagCommand) { execute(le.env, c.Stream(), domain.TariffTagDecider(), c) }
	tag(domain.CreateTariffTag{ID: 31, Provider: 1, Name: "Sport pack", Position: 2})
	tag(domain.CreateTariffTag{ID: 32, Provider: 1, Name: "Kids", Position: 1, Enabled: ptr(false)})
	tag(domain.CreateTariffTag{ID: 33, Provider: 2, Name: "Sport", Position: 0})
	le.tariff(domain.UpdateTariff{ID: 12, Tag: domain.Some(int64(31))})
	le.r.sync()

	tariffs := func(q TariffQuery) []int64 {
		q.Scope = AllProviders
		return ids(must(m.ListTariffs(q)), func(t domain.Tariff) int64 { return t.ID })
	}
	for name, tc := range map[string]struct {
		q    TariffQuery
		want []int64
	}{
		"channel":      {TariffQuery{Channel: 5}, []int64{11}},
		"channel both": {TariffQuery{Channel: 6}, []int64{11, 12}},
		"tag":          {TariffQuery{Tag: 31}, []int64{12}},
		"search":       {TariffQuery{Search: "PREM"}, []int64{12}},
		"search none":  {TariffQuery{Search: "zzz"}, nil},
	} {
		if got := tariffs(tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("tariffs by %s: %v, want %v", name, got, tc.want)
		}
	}

	chans := func(q ChannelQuery) []int64 {
		if q.Scope == (Scope{}) {
			q.Scope = AllProviders
		}
		return ids(must(m.ListChannels(q)), func(c domain.Channel) int64 { return c.ID })
	}
	if got := ids(must(m.ListChannels(ChannelQuery{Tariff: 12})), func(c domain.Channel) int64 { return c.ID }); len(got) != 0 {
		t.Errorf("channels of a tariff in the zero scope: %v", got)
	}
	for name, tc := range map[string]struct {
		q    ChannelQuery
		want []int64
	}{
		"all live":            {ChannelQuery{}, []int64{5, 6}},
		"tariff":              {ChannelQuery{Tariff: 12}, []int64{6}},
		"tariff in scope":     {ChannelQuery{Tariff: 12, Scope: ProviderScope(1)}, []int64{6}},
		"tariff out of scope": {ChannelQuery{Tariff: 12, Scope: ProviderScope(2)}, nil},
		"unknown tariff":      {ChannelQuery{Tariff: 99}, nil},
		"enabled":             {ChannelQuery{Enabled: ptr(true)}, []int64{5}},
		"disabled":            {ChannelQuery{Enabled: ptr(false)}, []int64{6}},
		"search by text name": {ChannelQuery{Search: "premier"}, []int64{6}},
		"search by name":      {ChannelQuery{Search: "euro"}, []int64{5}},
	} {
		if got := chans(tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("channels by %s: %v, want %v", name, got, tc.want)
		}
	}

	tags := func(q TariffTagQuery) []int64 {
		return ids(must(m.ListTariffTags(q)), func(t domain.TariffTag) int64 { return t.ID })
	}
	for name, tc := range map[string]struct {
		q    TariffTagQuery
		want []int64
	}{
		"all":              {TariffTagQuery{Scope: AllProviders}, []int64{31, 32, 33}},
		"scoped":           {TariffTagQuery{Scope: ProviderScope(2)}, []int64{33}},
		"zero scope":       {TariffTagQuery{}, nil},
		"provider":         {TariffTagQuery{Scope: AllProviders, Provider: 1}, []int64{31, 32}},
		"foreign provider": {TariffTagQuery{Scope: ProviderScope(2), Provider: 1}, nil},
		"enabled":          {TariffTagQuery{Scope: AllProviders, Enabled: ptr(false)}, []int64{32}},
		"search":           {TariffTagQuery{Scope: AllProviders, Search: "sport"}, []int64{31, 33}},
		"by position":      {TariffTagQuery{Scope: AllProviders, Page: Page{Sort: []SortKey{{Field: "position"}}}}, []int64{33, 32, 31}},
	} {
		if got := tags(tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("tags by %s: %v, want %v", name, got, tc.want)
		}
	}
	if got := m.TariffsTagged(31); !slices.Equal(got, []int64{12}) {
		t.Errorf("tariffs tagged 31: %v", got)
	}

	if got := ids(must(m.ListProviders(ProviderQuery{Scope: AllProviders, Search: "tw"})), func(p domain.Provider) int64 { return p.ID }); !slices.Equal(got, []int64{2}) {
		t.Errorf("providers searched: %v", got)
	}
	if got := m.ProvidersInRegion(3); !slices.Equal(got, []int64{1}) {
		t.Errorf("providers in region 3: %v", got)
	}
	if got := ids(must(m.ListRegions(RegionQuery{Search: "west"})), func(r domain.Region) int64 { return r.ID }); !slices.Equal(got, []int64{3}) {
		t.Errorf("regions searched: %v", got)
	}
	if got := ids(must(m.ListRegions(RegionQuery{Page: Page{Sort: []SortKey{{Field: "name", Desc: true}}}})), func(r domain.Region) int64 { return r.ID }); !slices.Equal(got, []int64{4, 3}) {
		t.Errorf("regions by name desc: %v", got)
	}
	if got := ids(must(m.ListDeviceTypes(DeviceTypeQuery{Search: "TV"})), func(d domain.DeviceType) int64 { return d.ID }); !slices.Equal(got, []int64{1, 2}) {
		t.Errorf("device types searched: %v", got)
	}
	if got := ids(must(m.ListDeviceTypes(DeviceTypeQuery{Search: "android"})), func(d domain.DeviceType) int64 { return d.ID }); !slices.Equal(got, []int64{2}) {
		t.Errorf("device types searched: %v", got)
	}
	if got := ids(must(m.ListCategories(CategoryQuery{Search: "spo"})), func(c domain.Category) int64 { return c.ID }); !slices.Equal(got, []int64{2}) {
		t.Errorf("categories searched: %v", got)
	}
	if got := m.CategoryChannels([]int64{1, 2, 9}); !reflect.DeepEqual(got, map[int64][]int64{1: {5, 6}, 2: {6}, 9: {}}) {
		t.Errorf("category channels: %v", got)
	}
	le.category(domain.DeleteCategory{ID: 2})
	le.r.sync()
	if got := m.LiveCategories([]int64{2, 1, 9}); !slices.Equal(got, []int64{1}) {
		t.Errorf("live categories: %v", got)
	}
	if ch, _ := m.Channel(6); !slices.Equal(ch.Categories, []int64{2, 1}) {
		t.Errorf("a channel's categories as stored: %v", ch.Categories)
	}
}

// TestOlderCatalogSnapshot checks that the catalog of a snapshot taken
// before tariff tags, regions, device types and the new channel, tariff
// and provider fields existed reads as what those entities were: channels
// enabled, no tag, no region.
func TestOlderCatalogSnapshot(t *testing.T) {
	older := `{"providers":[{"key":1,"rev":0,"v":{"ID":1,"Name":"P","Enabled":true,"DevicesPerAccountLimit":null,"FreeTariff":null,
		"Billing":{"Resolve":false,"URL":"","Token":""},"Deleted":false}}],
		"tariffs":[{"key":2,"rev":0,"v":{"ID":2,"Provider":1,"Name":"T","Enabled":true,"Channels":[3],"Description":"","Deleted":false}}],
		"channels":[{"key":3,"rev":0,"v":{"ID":3,"Name":"C","Number":1,"LogoURL":"","Description":"","Categories":[],"Deleted":false}}],
		"categories":[],"admins":[]}`
	var cat snapCatalog
	if err := json.Unmarshal([]byte(older), &cat); err != nil {
		t.Fatal(err)
	}
	s := newState()
	restoreCatalog(s, &cat)
	m := New(nil)
	m.st = s
	if ch, ok := m.Channel(3); !ok || ch.Disabled || ch.TextName != "" || ch.TimeShiftDepth != nil {
		t.Errorf("channel %+v, %v: want enabled, no text name, no time shift", ch, ok)
	}
	if tr, ok := m.Tariff(2); !ok || tr.Tag != nil {
		t.Errorf("tariff %+v, %v: want no tag", tr, ok)
	}
	if p, ok := m.Provider(1); !ok || p.RegionTag != nil || p.Comment != "" || p.LogoURL != "" {
		t.Errorf("provider %+v, %v", p, ok)
	}
	if st := m.Stats(); st.TariffTags+st.Regions+st.DeviceTypes != 0 {
		t.Errorf("stats %+v", st)
	}
}
