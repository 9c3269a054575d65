// Package stats projects the event log into per-day statistics facts
// and answers the Statistics API (subscription, device and account
// statistics over a range of days) from them.
//
// The projector (this package) turns events into facts; a FactStore keeps
// them. Backends: an embedded one (the default, no server) and ClickHouse.
// Both must give the same answers for the same events: the conformance
// suite in stats/statstest runs against every backend.
//
// Writes are idempotent. Every fact row carries a Version (the log position
// that produced it, or a later recomputation's); a row written again with
// the same key replaces the older one and the higher version wins, so
// replaying or re-delivering events never double-counts.
package stats

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Day is a calendar day as the number of days since 1970-01-01. Days are
// cut at midnight in the statistics time zone (UTC unless configured).
type Day int32

// DayOf returns the day of t in loc.
func DayOf(t time.Time, loc *time.Location) Day {
	y, m, d := t.In(loc).Date()
	return Day(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

// ParseDay parses "YYYY-MM-DD".
func ParseDay(s string) (Day, error) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil || len(s) != len(time.DateOnly) {
		return 0, fmt.Errorf("must be a date YYYY-MM-DD")
	}
	return Day(t.Unix() / 86400), nil
}

// Time returns midnight at the start of d in loc.
func (d Day) Time(loc *time.Location) time.Time {
	y, m, dd := time.Unix(int64(d)*86400, 0).UTC().Date()
	return time.Date(y, m, dd, 0, 0, 0, 0, loc)
}

// String returns "YYYY-MM-DD", the form dates are bound in SQL (a
// time.Time bound against a Date column matches nothing on ClickHouse 18).
func (d Day) String() string { return time.Unix(int64(d)*86400, 0).UTC().Format(time.DateOnly) }

// SubscriptionDay is the end-of-day subscription statistic of one tariff of
// one provider: the state after every event before the next midnight. Active
// counts subscribed accounts that viewed a channel that day.
type SubscriptionDay struct {
	Day                Day
	Provider           int64
	Tariff             int64
	Enabled            int64 // enabled accounts subscribed at end of day
	EnabledDevices     int64 // devices bound to those accounts
	Active             int64 // subscribed accounts that viewed that day
	Disabled           int64 // disabled accounts subscribed at end of day
	EnabledWithDevices int64 // enabled subscribed accounts with a device
	Version            uint64
}

// ViewingFact is one reported viewing session, attributed to the day it
// started. Key (Position, Index) identifies it: the log position of its
// ViewingReported event and its index in the event.
type ViewingFact struct {
	Day      Day
	Provider int64
	Account  int64
	Device   int64
	Class    string // stb, tv, phone, tablet, web
	Channel  int64
	Live     bool // false: DVR
	Seconds  int64
	Position uint64
	Index    int32
}

// DeviceClassSeen records the first day a device of a class connected to a
// provider: the Statistics API reports a class from that day on.
type DeviceClassSeen struct {
	Provider int64
	Class    string
	Day      Day
}

// Range is an inclusive range of days, optionally limited to a provider.
type Range struct {
	From, To Day
	Provider int64 // 0: every provider
}

// DeviceClassTotal is the viewing of one device class of a provider over a
// range: the Statistics API's device statistic before unit conversion.
type DeviceClassTotal struct {
	Provider      int64
	Class         string
	LiveSeconds   int64
	DVRSeconds    int64
	UniqueDevices int64
}

// AccountChannelTotal is one account's viewing of one channel over a range.
type AccountChannelTotal struct {
	Provider    int64
	Account     int64
	Channel     int64
	LiveSeconds int64
	DVRSeconds  int64
}

// FactStore keeps facts and aggregates them. Implementations must be safe
// for concurrent use; writes of rows already present (same key) replace
// them, the higher Version winning, so they are idempotent.
type FactStore interface {
	// WriteSubscriptionDays upserts rows keyed by (Provider, Day, Tariff).
	WriteSubscriptionDays(ctx context.Context, rows []SubscriptionDay) error
	// WriteViewing upserts facts keyed by (Position, Index).
	WriteViewing(ctx context.Context, facts []ViewingFact) error
	// WriteClassSeen keeps the earliest Day per (Provider, Class).
	WriteClassSeen(ctx context.Context, rows []DeviceClassSeen) error

	// SubscriptionDays calls fn for every row in r, ordered by provider,
	// day, tariff, streaming as AccountChannelTotals does; fn returning an
	// error stops.
	SubscriptionDays(ctx context.Context, r Range, fn func(SubscriptionDay) error) error
	// DeviceClassTotals returns per provider and class the viewing in r,
	// only for classes first seen on or before r.To, ordered by provider
	// then class.
	DeviceClassTotals(ctx context.Context, r Range) ([]DeviceClassTotal, error)
	// AccountChannelTotals calls fn for every (account, channel) with
	// viewing in r, ordered by provider, account, channel, streaming so a
	// long range is never held in memory; fn returning an error stops.
	AccountChannelTotals(ctx context.Context, r Range, fn func(AccountChannelTotal) error) error
	// ActiveAccounts returns the distinct accounts of provider with viewing
	// on day d (the projector uses it to recompute Active for late reports).
	ActiveAccounts(ctx context.Context, provider int64, d Day) ([]int64, error)

	Close() error
}

// ErrUnavailable is wrapped by FactStore errors caused by the backend being
// unreachable (the API answers 503).
var ErrUnavailable = errors.New("stats: fact store unavailable")

// AllSubscriptionDays returns the rows of f in r, ordered by provider, day,
// tariff.
func AllSubscriptionDays(ctx context.Context, f FactStore, r Range) ([]SubscriptionDay, error) {
	var out []SubscriptionDay
	err := f.SubscriptionDays(ctx, r, func(row SubscriptionDay) error {
		out = append(out, row)
		return nil
	})
	return out, err
}

// Replacer is a FactStore whose facts a rebuild can replace while it
// serves: the rebuild opens an empty store beside it (Beside), fills that
// one from the log, and Replace puts the new facts in place of the old
// ones, which are dropped. Reads and writes wait while Replace runs.
type Replacer interface {
	FactStore
	// Beside opens an empty store of the same kind beside this one (what
	// an earlier rebuild left there is dropped first).
	Beside(ctx context.Context) (FactStore, error)
	// Replace makes the facts of beside, a store Beside returned, this
	// store's, drops the old ones, and closes beside.
	Replace(ctx context.Context, beside FactStore) error
	// Discard closes beside, a store Beside returned, and drops its facts.
	Discard(beside FactStore) error
}
