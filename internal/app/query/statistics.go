package query

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
	"tvsm/projections/stats"

	"tvsm/domain"
)

// MaxRangeDays is the longest range the Statistics API answers, in days
// from first to last: three years, a leap day and one more day.
const MaxRangeDays = 3*365 + 1 + 1

// ClosedDays tells which days are closed: *stats.Projector implements it.
type ClosedDays interface {
	ClosedThrough() (stats.Day, bool)
}

// Statistics answers the Statistics API from a fact store and the catalog. A
// day appears once it is closed: ranges are cut at the last closed day.
type Statistics struct {
	facts   stats.FactStore
	catalog StatsCatalog
	closed  ClosedDays
}

// NewStatistics returns the statistics service. closed is normally the
// projector feeding facts.
func NewStatistics(facts stats.FactStore, catalog StatsCatalog, closed ClosedDays) *Statistics {
	return &Statistics{facts: facts, catalog: catalog, closed: closed}
}

// ClosedThrough returns the last closed day; ok is false while none is.
func (s *Statistics) ClosedThrough() (stats.Day, bool) { return s.closed.ClosedThrough() }

// StatsQuery is a request: a range of days, and one provider or (0) every
// provider.
type StatsQuery struct {
	From, To stats.Day
	Provider int64
}

// Validate checks the range: From <= To and at most MaxRangeDays.
func (q StatsQuery) Validate() error {
	switch {
	case q.From > q.To:
		return domain.NewValidationError("to", "must not be before from")
	case int(q.To-q.From) >= MaxRangeDays:
		return domain.NewValidationError("to", fmt.Sprintf("the range may span at most %d days", MaxRangeDays))
	}
	return nil
}

// scope returns the providers to report on, and the range of closed days
// to read (ok false: none of the range is closed).
func (s *Statistics) scope(q StatsQuery) (providers []int64, r stats.Range, ok bool, err error) {
	if err := q.Validate(); err != nil {
		return nil, stats.Range{}, false, err
	}
	if q.Provider != 0 {
		if !s.catalog.ProviderExists(q.Provider) {
			return nil, stats.Range{}, false, fmt.Errorf("stats: provider %d: %w", q.Provider, domain.ErrNotFound)
		}
		providers = []int64{q.Provider}
	} else {
		providers = s.catalog.Providers()
	}
	last, closed := s.closed.ClosedThrough()
	r = stats.Range{From: q.From, To: min(q.To, last), Provider: q.Provider}
	if len(providers) == 1 {
		r.Provider = providers[0] // rows of other (deleted) providers are not shown anyway
	}
	return providers, r, closed && r.From <= r.To, nil
}

// SubscriptionWriter receives the subscription statistic as it is read,
// so that three years of rows are streamed rather than held: for each
// provider, BeginProvider, then for each of its closed days in the range
// that has rows, Day followed by the day's rows in tariff order, then
// EndProvider. name is the tariff's name ("" for a deleted tariff). An
// error stops.
type SubscriptionWriter interface {
	BeginProvider(provider int64) error
	Day(d stats.Day) error
	Tariff(row *stats.SubscriptionDay, name string) error
	EndProvider() error
}

// Subscriptions answers /api/stats/subscription, streaming to w: one
// element per provider.
func (s *Statistics) Subscriptions(ctx context.Context, q StatsQuery, w SubscriptionWriter) error {
	providers, r, ok, err := s.scope(q)
	if err != nil {
		return err
	}
	st := subscriptionStream{w: w, providers: providers, names: map[int64]string{}, cur: -1}
	if ok {
		if err := s.facts.SubscriptionDays(ctx, r, func(row stats.SubscriptionDay) error {
			st.last = row // reused: a pointer to row would put every row on the heap
			return st.row(s.catalog, &st.last)
		}); err != nil {
			return err
		}
	}
	if err := st.beginThrough(len(providers) - 1); err != nil {
		return err
	}
	return st.end()
}

// subscriptionStream turns the store's rows, ordered by provider, day,
// tariff, into SubscriptionWriter calls, beginning the providers without
// rows in their turn.
type subscriptionStream struct {
	w         SubscriptionWriter
	providers []int64
	names     map[int64]string
	cur, next int // the provider begun and not ended (-1: none), the next to begin
	day       stats.Day
	last      stats.SubscriptionDay
}

func (st *subscriptionStream) row(catalog StatsCatalog, row *stats.SubscriptionDay) error {
	i, found := slices.BinarySearch(st.providers, row.Provider)
	switch {
	case !found:
		return nil // a deleted provider
	case i < st.cur:
		return fmt.Errorf("stats: subscription rows out of order: provider %d after %d", row.Provider, st.providers[st.cur])
	case i > st.cur:
		if err := st.beginThrough(i); err != nil {
			return err
		}
	case row.Day == st.day:
		return st.tariff(catalog, row)
	}
	st.day = row.Day
	if err := st.w.Day(row.Day); err != nil {
		return err
	}
	return st.tariff(catalog, row)
}

func (st *subscriptionStream) tariff(catalog StatsCatalog, row *stats.SubscriptionDay) error {
	name, known := st.names[row.Tariff]
	if !known {
		name = catalog.TariffName(row.Tariff)
		st.names[row.Tariff] = name
	}
	return st.w.Tariff(row, name)
}

// beginThrough ends the current provider and begins every provider up to
// providers[i], which is left current.
func (st *subscriptionStream) beginThrough(i int) error {
	for st.next <= i {
		if err := st.end(); err != nil {
			return err
		}
		if err := st.w.BeginProvider(st.providers[st.next]); err != nil {
			return err
		}
		st.cur, st.next = st.next, st.next+1
	}
	return nil
}

// end ends the current provider, if one is begun.
func (st *subscriptionStream) end() error {
	if st.cur < 0 {
		return nil
	}
	st.cur = -1
	return st.w.EndProvider()
}

// ProviderDevices is one provider's device statistic: one row per device
// class seen by the end of the range.
type ProviderDevices struct {
	Provider int64
	Classes  []stats.DeviceClassTotal
}

// Devices answers /api/stats/device: one element per provider.
func (s *Statistics) Devices(ctx context.Context, q StatsQuery) ([]ProviderDevices, error) {
	providers, r, ok, err := s.scope(q)
	if err != nil {
		return nil, err
	}
	out := make([]ProviderDevices, len(providers))
	for i, p := range providers {
		out[i].Provider = p
	}
	if !ok {
		return out, nil
	}
	rows, err := s.facts.DeviceClassTotals(ctx, r)
	if err != nil {
		return nil, err
	}
	for _, row := range rows {
		if i, found := slices.BinarySearch(providers, row.Provider); found {
			out[i].Classes = append(out[i].Classes, row)
		}
	}
	return out, nil
}

// AccountStat is one account's viewing per channel over the range.
type AccountStat struct {
	Account  int64
	Contract string
	Channels []stats.AccountChannelTotal
}

// AccountWriter receives the account statistic as it is read, so that a
// long range is streamed: for each provider, BeginProvider, then its
// accounts in id order, then EndProvider with the channels its tariffs
// carry or its accounts watched, and their categories. An error stops.
// Account must not keep a.Channels, which is reused.
type AccountWriter interface {
	BeginProvider(provider int64) error
	Account(a AccountStat) error
	EndProvider(channels []ChannelInfo, categories []CategoryInfo) error
}

// Accounts answers /api/stats/account, streaming to w.
func (s *Statistics) Accounts(ctx context.Context, q StatsQuery, w AccountWriter) error {
	providers, r, ok, err := s.scope(q)
	if err != nil {
		return err
	}
	for _, p := range providers {
		if err := w.BeginProvider(p); err != nil {
			return err
		}
		watched := map[int64]struct{}{}
		if ok {
			r.Provider = p
			if err := s.streamAccounts(ctx, r, w, watched); err != nil {
				return err
			}
		}
		channels, categories := s.dictionary(p, watched)
		if err := w.EndProvider(channels, categories); err != nil {
			return err
		}
	}
	return nil
}

// streamAccounts groups the store's (account, channel) rows by account.
func (s *Statistics) streamAccounts(ctx context.Context, r stats.Range, w AccountWriter, watched map[int64]struct{}) error {
	var cur AccountStat
	emit := func() error {
		if len(cur.Channels) == 0 {
			return nil
		}
		cur.Contract = s.catalog.AccountContract(cur.Account)
		err := w.Account(cur)
		cur = AccountStat{Channels: cur.Channels[:0]}
		return err
	}
	err := s.facts.AccountChannelTotals(ctx, r, func(row stats.AccountChannelTotal) error {
		if row.Account != cur.Account {
			if err := emit(); err != nil {
				return err
			}
			cur.Account = row.Account
		}
		cur.Channels = append(cur.Channels, row)
		watched[row.Channel] = struct{}{}
		return nil
	})
	if err != nil {
		return err
	}
	return emit()
}

// dictionary returns the channels of a provider's tariffs and those its
// accounts watched (deleted ones with an empty name), and the categories
// they are listed in, each ordered by id.
func (s *Statistics) dictionary(provider int64, watched map[int64]struct{}) ([]ChannelInfo, []CategoryInfo) {
	ids := append(s.catalog.ProviderChannels(provider), slices.Collect(maps.Keys(watched))...)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	channels := make([]ChannelInfo, 0, len(ids))
	cats := map[int64]CategoryInfo{}
	for _, id := range ids {
		ch, ok := s.catalog.Channel(id)
		if !ok {
			ch = ChannelInfo{ID: id}
		}
		channels = append(channels, ch)
		for _, c := range ch.Categories {
			if _, done := cats[c]; done {
				continue
			}
			info, ok := s.catalog.Category(c)
			if !ok {
				info = CategoryInfo{ID: c}
			}
			cats[c] = info
		}
	}
	categories := slices.SortedFunc(maps.Values(cats), func(a, b CategoryInfo) int { return cmp.Compare(a.ID, b.ID) })
	return channels, categories
}

// Yesterday is a ClosedDays for a Statistics without a projector in the
// process: every day before today (in loc, by clock) counts as closed.
type Yesterday struct {
	Location *time.Location
	Clock    func() time.Time
}

// ClosedThrough implements ClosedDays.
func (y Yesterday) ClosedThrough() (stats.Day, bool) {
	now, loc := time.Now, y.Location
	if y.Clock != nil {
		now = y.Clock
	}
	if loc == nil {
		loc = time.UTC
	}
	return stats.DayOf(now(), loc) - 1, true
}
