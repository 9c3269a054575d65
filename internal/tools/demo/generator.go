package demo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"tvsm/domain"
	"tvsm/internal/app"
	"tvsm/internal/app/command"
	"tvsm/internal/app/query"
	"tvsm/internal/wiring/node"
	"tvsm/projections/readmodel"
)

// generator plans each day with one random source (so a seed gives one
// history) and runs the day's writes on the workers. Planning is
// sequential; a job touches only its own account, so jobs of a phase run
// in parallel and the next phase sees their results.
type generator struct {
	o      Options
	n      *node.Node
	clk    *clock
	rng    *rand.Rand
	caller app.Caller
	counts counters

	categories []int64
	channels   []channel
	providers  []*provider
	accounts   []*account // live and deleted, in order of creation
	arrivals   []int      // arrivals[d]: accounts created on day d
}

type channel struct {
	id     int64
	weight float64 // popularity
}

type provider struct {
	id     int64
	name   string
	tiers  []*tariff // base tariffs, cheapest first
	addons []*tariff
}

type tariff struct {
	id       int64
	channels []int64
}

type account struct {
	n        int
	id       int64
	provider *provider
	enabled  bool
	deleted  bool
	subs     []*subscription
	devices  []*device
}

type subscription struct {
	id     int64
	tariff *tariff
}

type device struct {
	identity query.DeviceIdentity
	class    domain.DeviceClass
	uniqueID string
	model    string
	firmware string
	os       string
	address  string
}

// Phases of a simulated day (UTC): accounts arrive, accounts change,
// devices report the day's viewing. Sessions end before the report.
const (
	arrivalsAt   = 8 * time.Hour
	changesAt    = 12 * time.Hour
	reportsAt    = 23*time.Hour + 40*time.Minute
	sessionsEnd  = 23*time.Hour + 30*time.Minute
	phaseLength  = 3 * time.Hour
	reportLength = 15 * time.Minute
)

func (g *generator) run(ctx context.Context, first time.Time) error {
	g.clk.set(first.Add(10*time.Minute), first.Add(arrivalsAt-time.Minute))
	if err := g.catalog(ctx); err != nil {
		return err
	}
	g.planArrivals()
	for d := range g.o.Days {
		day := first.AddDate(0, 0, d)
		if err := g.day(ctx, d, day); err != nil {
			return err
		}
		if g.o.Progress != nil {
			g.o.Progress(d+1, g.o.Days, g.counts.snapshot())
		}
	}
	return nil
}

// day simulates one day, then waits for the statistics to apply it before
// the clock passes its midnight.
func (g *generator) day(ctx context.Context, d int, day time.Time) error {
	g.clk.set(day.Add(arrivalsAt), day.Add(arrivalsAt+phaseLength))
	if err := g.parallel(ctx, g.planNewAccounts(g.arrivals[d])); err != nil {
		return err
	}
	g.clk.set(day.Add(changesAt), day.Add(changesAt+phaseLength))
	if err := g.parallel(ctx, g.planChanges()); err != nil {
		return err
	}
	g.clk.set(day.Add(reportsAt), day.Add(reportsAt+reportLength))
	if err := g.parallel(ctx, g.planViewing(day)); err != nil {
		return err
	}
	return g.settle(ctx)
}

var (
	categoryNames = []string{"News", "Sports", "Kids", "Movies", "Music", "Documentary", "Entertainment", "Regional"}
	channelNames  = []string{
		"News 24", "Sport One", "Kids Planet", "Cinema Classic", "Music Hits", "Discovery World", "Comedy Central", "City TV",
		"World News", "Sport Two", "Cartoon Time", "Action Movies", "Rock FM TV", "Nature HD", "Drama Channel", "Regional 1",
		"Business Today", "Football HD", "Junior", "Family Movies", "Jazz Lounge", "History", "Reality", "Regional 2",
		"Weather", "Tennis Live", "Teen TV", "Series+", "Classic Music", "Science", "Talk Show", "Local News",
		"Parliament", "Motor Sport", "Learning", "Horror", "Dance", "Travel", "Cooking", "Shopping",
	}
	tierNames  = []string{"Basic", "Standard", "Premium"}
	addonNames = []string{"Sports Pack", "Kids Club", "Movie Night", "Music Box", "Documentary+", "News Plus", "Max", "Family"}
	firstNames = []string{"Anna", "Boris", "Chen", "Dana", "Elena", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kira", "Luis",
		"Maya", "Nikolai", "Olga", "Pavel", "Rosa", "Sven", "Tanya", "Umar", "Vera", "Walter", "Yana", "Zoran"}
	lastNames = []string{"Ivanova", "Smith", "Müller", "Kowalski", "Novak", "García", "Rossi", "Petrov", "Silva", "Kim",
		"Nielsen", "Popescu", "Horvat", "Dubois", "Jensen", "Moreau", "Virtanen", "Costa"}
	providerNames = []string{"Acme Cable", "Beta Fiber", "Citynet", "Delta Telecom", "Echo Broadband", "Fox Valley TV"}
)

// catalog creates categories, channels, providers and their tariffs.
func (g *generator) catalog(ctx context.Context) error {
	c := g.n.Commands
	for _, name := range categoryNames {
		cat, err := c.Categories.Create(ctx, g.caller, command.NameFields{Name: domain.Some(name)})
		if err != nil {
			return fmt.Errorf("demo: category: %w", err)
		}
		g.categories = append(g.categories, cat.ID)
	}
	for i := range g.o.Channels {
		name := fmt.Sprintf("Channel %d", i+1)
		if i < len(channelNames) {
			name = channelNames[i]
		}
		ch, err := c.Channels.Create(ctx, g.caller, command.ChannelFields{
			Name: domain.Some(name), Number: domain.Some(i + 1), Categories: domain.Some([]int64{g.categories[i%len(g.categories)]}),
		})
		if err != nil {
			return fmt.Errorf("demo: channel: %w", err)
		}
		// A few channels draw most viewing.
		g.channels = append(g.channels, channel{id: ch.ID, weight: 1 / float64(1+i%17) / (1 + float64(i)/20)})
	}
	for i := range g.o.Providers {
		name := fmt.Sprintf("Provider %d", i+1)
		if i < len(providerNames) {
			name = providerNames[i]
		}
		p, err := c.Providers.Create(ctx, g.caller, command.ProviderFields{Name: domain.Some(name), DevicesPerAccountLimit: domain.Some(5)})
		if err != nil {
			return fmt.Errorf("demo: provider: %w", err)
		}
		g.providers = append(g.providers, &provider{id: p.ID, name: name})
	}
	for i := range g.o.Tariffs {
		p := g.providers[i%len(g.providers)]
		if err := g.tariff(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// tariff adds the provider's next tariff: three tiers of growing channel
// lists, then add-ons of a few themed channels.
func (g *generator) tariff(ctx context.Context, p *provider) error {
	var name string
	var chans []int64
	all := make([]int64, len(g.channels))
	for i, ch := range g.channels {
		all[i] = ch.id
	}
	if k := len(p.tiers); k < len(tierNames) {
		name = tierNames[k]
		chans = all[:max(3, len(all)*(k+2)/4)]
	} else {
		k := len(p.addons)
		name = addonNames[k%len(addonNames)]
		if k >= len(addonNames) {
			name = fmt.Sprintf("%s %d", name, k/len(addonNames)+1)
		}
		for i := k % len(g.categories); i < len(all); i += len(g.categories) {
			chans = append(chans, all[i])
		}
	}
	t, err := g.n.Commands.Tariffs.Create(ctx, g.caller, command.TariffFields{
		Provider: domain.Some(p.id), Name: domain.Some(name), Channels: domain.Some(chans),
		Description: domain.Some(fmt.Sprintf("%s of %s: %d channels", name, p.name, len(chans))),
	})
	if err != nil {
		return fmt.Errorf("demo: tariff: %w", err)
	}
	tr := &tariff{id: t.ID, channels: chans}
	if len(p.tiers) < len(tierNames) {
		p.tiers = append(p.tiers, tr)
	} else {
		p.addons = append(p.addons, tr)
	}
	return nil
}

// planArrivals spreads the accounts over the days: most exist on the
// first day, the rest arrive one day or another.
func (g *generator) planArrivals() {
	g.arrivals = make([]int, g.o.Days)
	initial := g.o.Accounts
	if g.o.Days > 1 {
		initial = g.o.Accounts * 6 / 10
	}
	g.arrivals[0] = initial
	for range g.o.Accounts - initial {
		g.arrivals[1+g.rng.IntN(g.o.Days-1)]++
	}
}

// indexes returns 0, 1, ..., n-1.
func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// chance is true with probability p.
func (g *generator) chance(p float64) bool { return g.rng.Float64() < p }

// pick chooses one of weighted items.
func pick[T any](rng *rand.Rand, items []T, weight func(T) float64) T {
	total := 0.0
	for _, it := range items {
		total += weight(it)
	}
	x := rng.Float64() * total
	for _, it := range items {
		if x -= weight(it); x < 0 {
			return it
		}
	}
	return items[len(items)-1]
}

var classWeights = map[domain.DeviceClass]float64{
	domain.DeviceSTB: 0.40, domain.DeviceTV: 0.25, domain.DevicePhone: 0.17, domain.DeviceTablet: 0.10, domain.DeviceWeb: 0.08,
}

// viewing likelihood of a device of each class on a given day.
var watchChance = map[domain.DeviceClass]float64{
	domain.DeviceSTB: 0.75, domain.DeviceTV: 0.65, domain.DevicePhone: 0.45, domain.DeviceTablet: 0.35, domain.DeviceWeb: 0.2,
}

var models = map[domain.DeviceClass][][3]string{ // model, firmware, os
	domain.DeviceSTB:    {{"TVIP S-Box v.605", "5.2.14", "Linux"}, {"TVIP S-Box v.530", "5.1.9", "Linux"}},
	domain.DeviceTV:     {{"Samsung Tizen TV", "3.4.0", "Tizen 7"}, {"LG webOS TV", "3.3.2", "webOS 23"}},
	domain.DevicePhone:  {{"Android phone", "3.8.1", "Android 14"}, {"iPhone", "3.8.0", "iOS 18"}},
	domain.DeviceTablet: {{"iPad", "3.8.0", "iPadOS 18"}, {"Android tablet", "3.8.1", "Android 13"}},
	domain.DeviceWeb:    {{"Web player", "2.1.0", "Chrome 140"}},
}

// newDevice plans a device of account a.
func (g *generator) newDevice(a *account) *device {
	classes := []domain.DeviceClass{domain.DeviceSTB, domain.DeviceTV, domain.DevicePhone, domain.DeviceTablet, domain.DeviceWeb}
	class := pick(g.rng, classes, func(c domain.DeviceClass) float64 { return classWeights[c] })
	if len(a.devices) == 0 {
		class = domain.DeviceSTB // the box that came with the contract
	}
	m := models[class][g.rng.IntN(len(models[class]))]
	return &device{class: class, uniqueID: fmt.Sprintf("%s-%07d-%d", class, a.n, len(a.devices)+1), model: m[0], firmware: m[1], os: m[2],
		address: fmt.Sprintf("%d.%d.%d.%d", 10, 20+a.provider.id%200, a.n/250%250, 1+a.n%250)}
}

// planNewAccounts plans k arrivals: the account, its first subscription
// (an add-on for some), its devices logging in.
func (g *generator) planNewAccounts(k int) []func(context.Context) error {
	jobs := make([]func(context.Context) error, 0, k)
	for range k {
		n := len(g.accounts) + 1
		// The first providers are the bigger ones.
		p := g.providers[pick(g.rng, indexes(len(g.providers)), func(i int) float64 { return float64(len(g.providers) - i) })]
		a := &account{n: n, provider: p, enabled: true}
		g.accounts = append(g.accounts, a)
		tier := p.tiers[pick(g.rng, indexes(len(p.tiers)), func(i int) float64 { return []float64{0.5, 0.3, 0.2}[i] })]
		tariffs := []*tariff{tier}
		if len(p.addons) > 0 && g.chance(0.3) {
			tariffs = append(tariffs, p.addons[g.rng.IntN(len(p.addons))])
		}
		var devs []*device
		for range 1 + g.rng.IntN(3) {
			d := g.newDevice(a)
			a.devices = append(a.devices, d)
			devs = append(devs, d)
		}
		first, last := firstNames[g.rng.IntN(len(firstNames))], lastNames[g.rng.IntN(len(lastNames))]
		in := command.AccountInput{
			Provider: domain.Some(p.id), Login: domain.Some(fmt.Sprintf("user%06d", n)), PinMD5: domain.Some(pinMD5),
			Fullname: domain.Some(first + " " + last), ContractInfo: domain.Some(fmt.Sprintf("C-%d-%06d", p.id, n)),
			RemoteCustomField: domain.Some(fmt.Sprintf("crm-%06d", n)),
			MainAddress:       domain.Some(fmt.Sprintf("%d %s Street, apt %d", 1+n%120, lastNames[n%len(lastNames)], 1+n%80)),
		}
		jobs = append(jobs, func(ctx context.Context) error {
			acc, err := g.n.Commands.Accounts.Create(ctx, g.caller, in)
			if err != nil {
				return fmt.Errorf("demo: account: %w", err)
			}
			a.id = acc.ID
			g.counts.accounts.Add(1)
			for _, t := range tariffs {
				if err := g.subscribe(ctx, a, t); err != nil {
					return err
				}
			}
			for _, d := range devs {
				if err := g.login(ctx, a, d); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return jobs
}

// subscribe starts a subscription of a to t now.
func (g *generator) subscribe(ctx context.Context, a *account, t *tariff) error {
	s, err := g.n.Commands.Subscriptions.Create(ctx, g.caller, command.SubscriptionInput{
		Account: domain.Some(a.id), Tariff: domain.Some(t.id), Start: domain.Some(g.clk.now().Truncate(time.Second)),
	})
	if err != nil {
		return fmt.Errorf("demo: subscription: %w", err)
	}
	a.subs = append(a.subs, &subscription{id: s.ID, tariff: t})
	g.counts.subscriptions.Add(1)
	return nil
}

// login logs device d of a in (binding it the first time).
func (g *generator) login(ctx context.Context, a *account, d *device) error {
	s, err := g.n.Commands.Devices.Login(ctx, command.DeviceLoginInput{
		Provider: a.provider.id, Login: fmt.Sprintf("user%06d", a.n), PasswordMD5: pinMD5, UniqueID: d.uniqueID,
		Class: d.class, Model: d.model, Firmware: d.firmware, OS: d.os, Address: d.address, RequestID: "demo",
	})
	if err != nil {
		return fmt.Errorf("demo: device login: %w", err)
	}
	if d.identity.Device == 0 {
		g.counts.devices.Add(1)
	}
	d.identity = identity(s, d.class)
	g.counts.logins.Add(1)
	return nil
}

// planChanges plans the day's changes of existing accounts: subscriptions
// ending, switched or added, accounts disabled and enabled again, renamed
// or deleted, firmware updates and new devices.
func (g *generator) planChanges() []func(context.Context) error {
	var jobs []func(context.Context) error
	for _, a := range g.accounts {
		if a.deleted || a.id == 0 {
			continue
		}
		var steps []func(context.Context) error
		add := func(f func(context.Context) error) { steps = append(steps, f) }
		switch {
		case g.chance(0.0005):
			a.deleted = true
			add(func(ctx context.Context) error {
				g.counts.deleted.Add(1)
				return must[query.AccountView]("delete account")(g.n.Commands.Accounts.Delete(ctx, g.caller, a.id))
			})
			jobs = append(jobs, steps...)
			continue
		case a.enabled && g.chance(0.002), !a.enabled && g.chance(0.08):
			a.enabled = !a.enabled
			enabled := a.enabled
			add(func(ctx context.Context) error {
				g.counts.changes.Add(1)
				return must[query.AccountView]("enable or disable")(g.n.Commands.Accounts.Update(ctx, g.caller, a.id, command.AccountInput{Enabled: domain.Some(enabled)}))
			})
		case g.chance(0.002):
			name := firstNames[g.rng.IntN(len(firstNames))] + " " + lastNames[g.rng.IntN(len(lastNames))]
			add(func(ctx context.Context) error {
				g.counts.changes.Add(1)
				return must[query.AccountView]("rename")(g.n.Commands.Accounts.Update(ctx, g.caller, a.id, command.AccountInput{Fullname: domain.Some(name)}))
			})
		}
		if len(a.subs) > 0 && g.chance(0.004) {
			i := g.rng.IntN(len(a.subs))
			ended := a.subs[i]
			a.subs = slices.Delete(a.subs, i, i+1)
			var next *tariff
			if p := a.provider; g.chance(0.6) || len(a.subs) == 0 {
				next = p.tiers[g.rng.IntN(len(p.tiers))]
			}
			add(func(ctx context.Context) error {
				g.counts.ended.Add(1)
				stop := g.clk.now().Truncate(time.Second)
				if err := must[readmodel.Subscription]("end subscription")(g.n.Commands.Subscriptions.Update(ctx, g.caller, ended.id,
					command.SubscriptionInput{Stop: domain.Some(stop)})); err != nil {
					return err
				}
				if next == nil {
					return nil
				}
				return g.subscribe(ctx, a, next)
			})
		} else if p := a.provider; len(p.addons) > 0 && g.chance(0.003) {
			t := p.addons[g.rng.IntN(len(p.addons))]
			add(func(ctx context.Context) error { return g.subscribe(ctx, a, t) })
		}
		for _, d := range a.devices {
			if d.class == domain.DeviceSTB && g.chance(0.004) {
				d.firmware = "5.3.0"
				add(func(ctx context.Context) error { return g.login(ctx, a, d) })
			}
		}
		if len(a.devices) < 5 && g.chance(0.002) {
			d := g.newDevice(a)
			a.devices = append(a.devices, d)
			add(func(ctx context.Context) error { return g.login(ctx, a, d) })
		}
		if len(steps) > 0 {
			jobs = append(jobs, func(ctx context.Context) error {
				for _, s := range steps {
					if err := s(ctx); err != nil {
						return err
					}
				}
				return nil
			})
		}
	}
	return jobs
}

// planViewing plans the day's viewing reports: each device of an enabled
// account with a subscription watches with its class's likelihood, a few
// sessions of its tariffs' channels, mostly in the evening.
func (g *generator) planViewing(day time.Time) []func(context.Context) error {
	var jobs []func(context.Context) error
	for _, a := range g.accounts {
		if a.deleted || !a.enabled || len(a.subs) == 0 || a.id == 0 {
			continue
		}
		var chans []channel
		for _, ch := range g.channels {
			for _, s := range a.subs {
				if slices.Contains(s.tariff.channels, ch.id) {
					chans = append(chans, ch)
					break
				}
			}
		}
		for _, d := range a.devices {
			if d.identity.Device == 0 || !g.chance(watchChance[d.class]) {
				continue
			}
			var sessions []command.ViewingSession
			at := day.Add(time.Duration(7+g.rng.IntN(4)) * time.Hour)
			if g.chance(0.7) {
				at = day.Add(time.Duration(17+g.rng.IntN(3))*time.Hour + time.Duration(g.rng.IntN(60))*time.Minute)
			}
			for range 1 + g.rng.IntN(4) {
				secs := int64(5*60 + g.rng.IntN(115*60))
				if end := at.Add(time.Duration(secs) * time.Second); end.After(day.Add(sessionsEnd)) {
					secs = int64(day.Add(sessionsEnd).Sub(at) / time.Second)
				}
				if secs < 60 {
					break
				}
				mode := "live"
				if g.chance(0.15) {
					mode = "dvr"
				}
				ch := pick(g.rng, chans, func(c channel) float64 { return c.weight })
				sessions = append(sessions, command.ViewingSession{Channel: ch.id, Mode: mode, Start: at, Seconds: secs})
				at = at.Add(time.Duration(secs+int64(g.rng.IntN(1800))) * time.Second)
			}
			if len(sessions) == 0 {
				continue
			}
			jobs = append(jobs, func(ctx context.Context) error {
				g.counts.reports.Add(1)
				g.counts.sessions.Add(int64(len(sessions)))
				if err := g.n.Commands.Devices.ReportViewing(ctx, d.identity, command.ViewingReport{Sessions: sessions, RequestID: "demo"}); err != nil {
					return fmt.Errorf("demo: viewing: %w", err)
				}
				return nil
			})
		}
	}
	return jobs
}
