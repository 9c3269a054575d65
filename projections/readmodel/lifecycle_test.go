package readmodel

import (
	"testing"
	"time"

	"tvsm/domain"
)

func ptr[T any](v T) *T { return &v }

// TestEntityLifecycle creates, updates and deletes every kind of entity
// through the application layer and a real store, and checks that the model
// fed by a runner shows each step.
func TestEntityLifecycle(t *testing.T) {
	e := newEnv(t)
	m := New(e.reg)
	r := e.run(m, Beginning)

	// Catalog.
	e.category(domain.CreateCategory{ID: 1, Name: "News"})
	e.category(domain.CreateCategory{ID: 2, Name: "Sport"})
	e.channel(domain.CreateChannel{ID: 10, Name: "First", Number: 1, Categories: []int64{1}})
	e.channel(domain.CreateChannel{ID: 11, Name: "Match", Number: 2, Categories: []int64{2}})
	e.provider(domain.CreateProvider{ID: 1, Name: "Acme", DevicesPerAccountLimit: ptr(3),
		Billing: domain.Billing{Resolve: true, URL: "https://billing.example/", Token: "s3cret"}})
	e.provider(domain.CreateProvider{ID: 2, Name: "Other"})
	e.tariff(domain.CreateTariff{ID: 100, Provider: 1, Name: "Basic", Channels: []int64{10}})
	e.admin(domain.CreateAdmin{Login: "root", PasswordHash: bcryptLike("a")})
	e.admin(domain.CreateAdmin{Login: "acme-ops", PasswordHash: bcryptLike("b"), Provider: ptr(int64(1))})
	r.sync()

	if p, ok := m.Provider(1); !ok || p.Name != "Acme" || *p.DevicesPerAccountLimit != 3 || p.Billing.Token != "s3cret" {
		t.Fatalf("provider 1 = %+v, %v", p, ok)
	}
	if tf, ok := m.Tariff(100); !ok || tf.Provider != 1 || len(tf.Channels) != 1 {
		t.Fatalf("tariff 100 = %+v, %v", tf, ok)
	}
	if c, ok := m.Channel(11); !ok || c.Name != "Match" || c.Categories[0] != 2 {
		t.Fatalf("channel 11 = %+v, %v", c, ok)
	}
	if c, ok := m.Category(2); !ok || c.Name != "Sport" {
		t.Fatalf("category 2 = %+v, %v", c, ok)
	}
	if a, ok := m.Admin("acme-ops"); !ok || a.Provider == nil || *a.Provider != 1 || a.PasswordHash != bcryptLike("b") {
		t.Fatalf("admin acme-ops = %+v, %v", a, ok)
	}

	// Copies: changing what a query returned changes nothing inside.
	p, _ := m.Provider(1)
	*p.DevicesPerAccountLimit = 99
	tf, _ := m.Tariff(100)
	tf.Channels[0] = 999
	if p2, _ := m.Provider(1); *p2.DevicesPerAccountLimit != 3 {
		t.Fatal("provider limit changed through a returned pointer")
	}
	if tf2, _ := m.Tariff(100); tf2.Channels[0] != 10 {
		t.Fatal("tariff channels changed through a returned slice")
	}

	// Catalog updates and deletes.
	e.category(domain.UpdateCategory{ID: 2, Name: domain.Some("Sports")})
	e.category(domain.DeleteCategory{ID: 1})
	e.channel(domain.UpdateChannel{ID: 10, Number: domain.Some(5), LogoURL: domain.Some("https://logo.example/1.png")})
	e.channel(domain.DeleteChannel{ID: 11})
	e.provider(domain.UpdateProvider{ID: 1, Name: domain.Some("Acme TV"), FreeTariff: domain.Some(int64(100))})
	e.provider(domain.DeleteProvider{ID: 2})
	e.tariff(domain.UpdateTariff{ID: 100, Name: domain.Some("Basic+"), Enabled: domain.Some(false)})
	e.tariff(domain.CreateTariff{ID: 101, Provider: 1, Name: "Doomed"})
	e.tariff(domain.DeleteTariff{ID: 101})
	e.admin(domain.ChangeAdminPassword{Login: "root", PasswordHash: bcryptLike("c")})
	e.admin(domain.ChangeAdminScope{Login: "acme-ops", Provider: nil})
	e.admin(domain.CreateAdmin{Login: "gone", PasswordHash: bcryptLike("d")})
	e.admin(domain.DeleteAdmin{Login: "gone"})
	r.sync()

	if c, _ := m.Category(2); c.Name != "Sports" {
		t.Errorf("category 2 after rename = %+v", c)
	}
	if _, ok := m.Category(1); ok {
		t.Error("deleted category 1 still found")
	}
	if c, _ := m.Channel(10); c.Number != 5 || c.LogoURL != "https://logo.example/1.png" {
		t.Errorf("channel 10 after update = %+v", c)
	}
	if _, ok := m.Channel(11); ok {
		t.Error("deleted channel 11 still found")
	}
	if p, _ := m.Provider(1); p.Name != "Acme TV" || p.FreeTariff == nil || *p.FreeTariff != 100 {
		t.Errorf("provider 1 after update = %+v", p)
	}
	if _, ok := m.Provider(2); ok {
		t.Error("deleted provider 2 still found")
	}
	if tf, _ := m.Tariff(100); tf.Name != "Basic+" || tf.Enabled {
		t.Errorf("tariff 100 after update = %+v", tf)
	}
	if _, ok := m.Tariff(101); ok {
		t.Error("deleted tariff 101 still found")
	}
	if a, _ := m.Admin("root"); a.PasswordHash != bcryptLike("c") {
		t.Errorf("root's hash = %q", a.PasswordHash)
	}
	if a, _ := m.Admin("acme-ops"); !a.Superadmin() {
		t.Errorf("acme-ops after scope change = %+v", a)
	}
	if _, ok := m.Admin("gone"); ok {
		t.Error("deleted admin still found")
	}
	wantLen(t, "providers", must(m.ListProviders(ProviderQuery{Scope: AllProviders})).Total, 1)
	wantLen(t, "tariffs", must(m.ListTariffs(TariffQuery{Scope: AllProviders})).Total, 1)
	wantLen(t, "channels", must(m.ListChannels(ChannelQuery{})).Total, 1)
	wantLen(t, "categories", must(m.ListCategories(CategoryQuery{})).Total, 1)
	wantLen(t, "admins", must(m.ListAdmins(AdminQuery{Scope: AllProviders})).Total, 2)

	// Accounts.
	id := e.newAccount(1, "anna", "Anna Karenina", func(c *domain.CreateAccount) {
		c.ContractInfo = ptr("C-1")
		c.RemoteCustomField = ptr("crm-7")
	})
	r.sync()
	a, ok := m.Account(id)
	if !ok || a.Login != "anna" || a.Fullname != "Anna Karenina" || !a.Enabled || *a.ContractInfo != "C-1" ||
		*a.RemoteCustomField != "crm-7" || a.MainAddress != nil || a.PinMD5 != "0123456789abcdef0123456789abcdef" {
		t.Fatalf("account = %+v, %v", a, ok)
	}
	if a.Created.IsZero() || a.Created.Location() != time.UTC {
		t.Errorf("created = %v", a.Created)
	}
	if got, ok := m.AccountByLogin(1, "anna"); !ok || got.ID != id {
		t.Errorf("by login: %+v, %v", got, ok)
	}
	if _, ok := m.AccountByLogin(2, "anna"); ok {
		t.Error("login found under another provider")
	}

	e.account(domain.UpdateAccount{ID: id, Login: domain.Some("anna.k"), Enabled: domain.Some(false),
		ContractInfo: domain.Null[string](), MainAddress: domain.Some("Moscow"), DevicesPerAccountLimit: domain.Some(1)})
	r.sync()
	a, _ = m.Account(id)
	if a.Login != "anna.k" || a.Enabled || a.ContractInfo != nil || *a.MainAddress != "Moscow" || *a.DevicesPerAccountLimit != 1 {
		t.Fatalf("account after update = %+v", a)
	}
	if _, ok := m.AccountByLogin(1, "anna"); ok {
		t.Error("old login still found")
	}
	if got, ok := m.AccountByLogin(1, "anna.k"); !ok || got.ID != id {
		t.Error("new login not found")
	}

	// Subscriptions.
	subID := e.nextID("subscription")
	start := base.Add(time.Hour)
	e.account(domain.AddSubscription{AccountID: id, SubscriptionID: subID, Tariff: 100, TariffProvider: 1, Start: start})
	r.sync()
	s, ok := m.Subscription(subID)
	if !ok || s.Account != id || s.Provider != 1 || s.Tariff != 100 || !s.Start.Equal(start) || !s.Open() {
		t.Fatalf("subscription = %+v, %v", s, ok)
	}
	stop := start.Add(30 * 24 * time.Hour)
	e.account(domain.UpdateSubscription{AccountID: id, SubscriptionID: subID, Stop: domain.Some(stop)})
	r.sync()
	if s, _ := m.Subscription(subID); s.Open() || !s.Stop.Equal(stop) {
		t.Fatalf("subscription after stop = %+v", s)
	}
	e.account(domain.UpdateSubscription{AccountID: id, SubscriptionID: subID, Stop: domain.Null[time.Time]()})
	r.sync()
	if s, _ := m.Subscription(subID); !s.Open() {
		t.Fatalf("subscription after reopening = %+v", s)
	}
	sub2 := e.nextID("subscription")
	e.account(domain.AddSubscription{AccountID: id, SubscriptionID: sub2, Tariff: 100, TariffProvider: 1, Start: start})
	e.account(domain.RemoveSubscription{AccountID: id, SubscriptionID: subID})
	r.sync()
	if _, ok := m.Subscription(subID); ok {
		t.Error("removed subscription still found")
	}
	if subs := m.AccountSubscriptions(id); len(subs) != 1 || subs[0].ID != sub2 {
		t.Errorf("subscriptions of account = %+v", subs)
	}

	// Devices.
	devID := e.nextID("device")
	e.account(domain.BindDevice{AccountID: id, DeviceID: devID, UniqueID: "AA:BB", Class: domain.DeviceSTB, Model: "MAG"})
	r.sync()
	d, ok := m.DeviceByUniqueID("AA:BB")
	if !ok || d.ID != devID || d.Account != id || d.Provider != 1 || d.Class != domain.DeviceSTB || d.Model != "MAG" || d.Created.IsZero() {
		t.Fatalf("device = %+v, %v", d, ok)
	}
	if d2, ok := m.Device(devID); !ok || d2 != d {
		t.Errorf("device by id = %+v, %v", d2, ok)
	}
	e.account(domain.UnbindDevice{AccountID: id, DeviceID: devID})
	r.sync()
	if _, ok := m.Device(devID); ok {
		t.Error("unbound device still found by id")
	}
	if _, ok := m.DeviceByUniqueID("AA:BB"); ok {
		t.Error("unbound device still found by unique id")
	}
	dev2 := e.nextID("device")
	e.account(domain.BindDevice{AccountID: id, DeviceID: dev2, UniqueID: "CC:DD", Class: domain.DeviceTV})
	r.sync()

	// The domain's view of the account matches the aggregate's state.
	want := replayStream(t, e, domain.AccountStream(id))
	if got, ok := m.AccountState(id); !ok || !equalAccounts(got, want) {
		t.Fatalf("account state:\n got %+v\nwant %+v", got, want)
	}

	// Deleting the account takes its subscriptions and devices along.
	e.account(domain.DeleteAccount{ID: id})
	r.sync()
	if _, ok := m.Account(id); ok {
		t.Error("deleted account still found")
	}
	if _, ok := m.AccountByLogin(1, "anna.k"); ok {
		t.Error("deleted account found by login")
	}
	if _, ok := m.Subscription(sub2); ok {
		t.Error("subscription of a deleted account still found")
	}
	if _, ok := m.DeviceByUniqueID("CC:DD"); ok {
		t.Error("device of a deleted account still found")
	}
	if p, ok := m.AccountOwner(id); !ok || p != 1 {
		t.Errorf("owner of the deleted account: %d, %v", p, ok)
	}
	if _, ok := m.AccountOwner(id + 1000); ok {
		t.Error("owner of an unknown account")
	}
	st := m.Stats()
	if st.Accounts != 0 || st.Subscriptions != 0 || st.Devices != 0 {
		t.Errorf("stats after delete = %+v", st)
	}
}

// must returns v, failing on a query error by panicking (tests only).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func wantLen(t *testing.T, what string, got, want int) {
	t.Helper()
	if got != want {
		t.Errorf("%s: %d, want %d", what, got, want)
	}
}

// bcryptLike returns a string shaped like a bcrypt hash (the domain checks
// the shape only).
func bcryptLike(seed string) string {
	h := "$2a$10$" + seed
	for len(h) < 60 {
		h += "x"
	}
	return h
}

// replayStream returns the account state the aggregate rebuilds from its
// stream.
func replayStream(t *testing.T, e *env, stream string) domain.Account {
	t.Helper()
	recs, err := e.store.ReadStream(t.Context(), stream, Start, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := domain.Account{}
	ev := domain.AccountDecider()
	for _, r := range recs {
		d, err := e.reg.Decode(r.Type, r.Data)
		if err != nil {
			t.Fatal(err)
		}
		s = ev.Evolve(s, d)
	}
	return s
}
