package stats

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"tvsm/domain"
)

// MaxRangeDays is the longest range the Statistics API answers, in days
// from first to last: three years, a leap day and one more day.
const MaxRangeDays = 3*365 + 1 + 1

// ClosedDays tells which days are closed: *Projector implements it.
type ClosedDays interface {
	ClosedThrough() (Day, bool)
}

// Service answers the Statistics API (spec §2.5) from a fact store and the
// catalog. A day appears once it is closed: ranges are cut at the last
// closed day.
type Service struct {
	facts   FactStore
	catalog Catalog
	closed  ClosedDays
}

// NewService returns the statistics service. closed is normally the
// projector feeding facts.
func NewService(facts FactStore, catalog Catalog, closed ClosedDays) *Service {
	return &Service{facts: facts, catalog: catalog, closed: closed}
}

// Query is a request: a range of days, and one provider or (0) every
// provider.
type Query struct {
	From, To Day
	Provider int64
}

// Validate checks the range: From <= To and at most MaxRangeDays.
func (q Query) Validate() error {
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
func (s *Service) scope(q Query) (providers []int64, r Range, ok bool, err error) {
	if err := q.Validate(); err != nil {
		return nil, Range{}, false, err
	}
	if q.Provider != 0 {
		if !s.catalog.ProviderExists(q.Provider) {
			return nil, Range{}, false, fmt.Errorf("stats: provider %d: %w", q.Provider, domain.ErrNotFound)
		}
		providers = []int64{q.Provider}
	} else {
		providers = s.catalog.Providers()
	}
	last, closed := s.closed.ClosedThrough()
	r = Range{From: q.From, To: min(q.To, last), Provider: q.Provider}
	return providers, r, closed && r.From <= r.To, nil
}

// ProviderSubscriptions is one provider's subscription statistic: its
// closed days in the range that have rows, in order, and the names of the
// tariffs in them.
type ProviderSubscriptions struct {
	Provider int64
	Days     []SubscriptionDayReport
	// Names are the tariffs' names ("" for a deleted tariff).
	Names map[int64]string
}

// SubscriptionDayReport is one day's rows, one per tariff in tariff order.
type SubscriptionDayReport struct {
	Day  Day
	Rows []SubscriptionDay
}

// Subscriptions answers /api/stats/subscription: one element per provider.
func (s *Service) Subscriptions(ctx context.Context, q Query) ([]ProviderSubscriptions, error) {
	providers, r, ok, err := s.scope(q)
	if err != nil {
		return nil, err
	}
	out := make([]ProviderSubscriptions, len(providers))
	for i, p := range providers {
		out[i] = ProviderSubscriptions{Provider: p, Names: map[int64]string{}}
	}
	if !ok {
		return out, nil
	}
	rows, err := s.facts.SubscriptionDays(ctx, r)
	if err != nil {
		return nil, err
	}
	// rows are ordered by provider, day, tariff: each day is a run of them.
	for start := 0; start < len(rows); {
		end := start + 1
		for end < len(rows) && rows[end].Provider == rows[start].Provider && rows[end].Day == rows[start].Day {
			end++
		}
		if i, found := slices.BinarySearch(providers, rows[start].Provider); found { // else a deleted provider
			ps := &out[i]
			ps.Days = append(ps.Days, SubscriptionDayReport{Day: rows[start].Day, Rows: rows[start:end]})
			for _, row := range rows[start:end] {
				if _, known := ps.Names[row.Tariff]; !known {
					ps.Names[row.Tariff] = s.catalog.TariffName(row.Tariff)
				}
			}
		}
		start = end
	}
	return out, nil
}

// ProviderDevices is one provider's device statistic: one row per device
// class seen by the end of the range.
type ProviderDevices struct {
	Provider int64
	Classes  []DeviceClassTotal
}

// Devices answers /api/stats/device: one element per provider.
func (s *Service) Devices(ctx context.Context, q Query) ([]ProviderDevices, error) {
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
	Channels []AccountChannelTotal
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
func (s *Service) Accounts(ctx context.Context, q Query, w AccountWriter) error {
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
func (s *Service) streamAccounts(ctx context.Context, r Range, w AccountWriter, watched map[int64]struct{}) error {
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
	err := s.facts.AccountChannelTotals(ctx, r, func(row AccountChannelTotal) error {
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
func (s *Service) dictionary(provider int64, watched map[int64]struct{}) ([]ChannelInfo, []CategoryInfo) {
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

// Yesterday is a ClosedDays for a Service without a projector in the
// process: every day before today (in loc, by clock) counts as closed.
type Yesterday struct {
	Location *time.Location
	Clock    func() time.Time
}

// ClosedThrough implements ClosedDays.
func (y Yesterday) ClosedThrough() (Day, bool) {
	now, loc := time.Now, y.Location
	if y.Clock != nil {
		now = y.Clock
	}
	if loc == nil {
		loc = time.UTC
	}
	return DayOf(now(), loc) - 1, true
}
