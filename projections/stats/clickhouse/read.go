package clickhouse

import (
	"context"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"tvsm/projections/stats"
)

// SubscriptionDays calls fn for the rows in r ordered by provider, day,
// tariff, as the driver reads them. A long range of one provider is read
// as consecutive windows of days queried at once, the first streamed and
// the others gathered meanwhile: ClickHouse 18.16 runs a FINAL query as
// one merging stream on one core, which made a three-year range most of
// the API's time (docs/benchmarks.md). Windows keep the order only within
// one provider, so a range of every provider is one query.
func (s *Store) SubscriptionDays(ctx context.Context, r stats.Range, fn func(stats.SubscriptionDay) error) error {
	windows := dayWindows(r)
	if len(windows) == 1 {
		return s.subscriptionWindow(ctx, r, fn)
	}
	ctx, cancel := context.WithCancel(ctx)
	later := make([]gathered, len(windows)-1)
	for i := range later {
		later[i].done = make(chan struct{})
		go func() {
			defer close(later[i].done)
			later[i].err = s.subscriptionWindow(ctx, windows[i+1], func(row stats.SubscriptionDay) error {
				later[i].rows.add(row)
				return nil
			})
		}()
	}
	defer func() {
		cancel()
		for i := range later {
			<-later[i].done
		}
	}()
	if err := s.subscriptionWindow(ctx, windows[0], fn); err != nil {
		return err
	}
	for i := range later {
		<-later[i].done
		if later[i].err != nil {
			return later[i].err
		}
		for _, row := range later[i].rows.all() {
			if err := fn(row); err != nil {
				return err
			}
		}
	}
	return nil
}

// gathered is a window's rows read in the background.
type gathered struct {
	rows collector[stats.SubscriptionDay]
	err  error
	done chan struct{}
}

// Windows of a long range: at least windowDays each, at most maxWindows.
const (
	windowDays = 180
	maxWindows = 4
)

// dayWindows splits a range of one provider into consecutive windows of
// days; every other range is one window.
func dayWindows(r stats.Range) []stats.Range {
	days := int(r.To-r.From) + 1
	n := min(maxWindows, days/windowDays)
	if r.Provider == 0 || n < 2 {
		return []stats.Range{r}
	}
	out := make([]stats.Range, n)
	from := r.From
	for i := range out {
		to := r.From + stats.Day(days*(i+1)/n) - 1
		out[i] = stats.Range{From: from, To: to, Provider: r.Provider}
		from = to + 1
	}
	return out
}

func (s *Store) subscriptionWindow(ctx context.Context, r stats.Range, fn func(stats.SubscriptionDay) error) error {
	query, args := rangeQuery(`SELECT toUInt16(date), provider_id, tariff_id, enabled, enabled_devices, active,
			disabled, enabled_with_devices, version
		FROM {db}.subscription_days FINAL`, r, `ORDER BY provider_id, date, tariff_id`)
	// Scan targets live across rows: passing fresh ones to Scan would
	// allocate every row.
	var day uint16
	var row stats.SubscriptionDay
	targets := []any{&day, &row.Provider, &row.Tariff, &row.Enabled, &row.EnabledDevices, &row.Active,
		&row.Disabled, &row.EnabledWithDevices, &row.Version}
	return s.each(ctx, "read subscription days", query, args, func(rows driver.Rows) error {
		if err := rows.Scan(targets...); err != nil {
			return err
		}
		row.Day = stats.Day(day)
		return fn(row)
	})
}

// DeviceClassTotals returns per provider and class the viewing in r, for
// every class first seen on or before r.To (with zeros when it has no
// viewing in r), ordered by provider then class.
func (s *Store) DeviceClassTotals(ctx context.Context, r stats.Range) ([]stats.DeviceClassTotal, error) {
	var out []stats.DeviceClassTotal
	seenQuery, seenArgs := providerQuery(
		`SELECT DISTINCT provider_id, class FROM {db}.class_seen WHERE date <= ?`, r, `ORDER BY provider_id, class`)
	err := s.each(ctx, "read device classes", seenQuery, append([]any{r.To.String()}, seenArgs...),
		func(rows driver.Rows) error {
			var t stats.DeviceClassTotal
			if err := rows.Scan(&t.Provider, &t.Class); err != nil {
				return err
			}
			out = append(out, t)
			return nil
		})
	if err != nil || len(out) == 0 {
		return out, err
	}
	totals := make(map[classKey]stats.DeviceClassTotal)
	query, args := rangeQuery(`SELECT provider_id, class, sumIf(seconds, live = 1), sumIf(seconds, live = 0),
			uniqExact(device_id)
		FROM {db}.viewing FINAL`, r, `GROUP BY provider_id, class`)
	err = s.each(ctx, "read device class totals", query, args, func(rows driver.Rows) error {
		var t stats.DeviceClassTotal
		var devices uint64
		if err := rows.Scan(&t.Provider, &t.Class, &t.LiveSeconds, &t.DVRSeconds, &devices); err != nil {
			return err
		}
		t.UniqueDevices = int64(devices)
		totals[classKey{t.Provider, t.Class}] = t
		return nil
	})
	for i, t := range out {
		if found, ok := totals[classKey{t.Provider, t.Class}]; ok {
			out[i] = found
		}
	}
	return out, err
}

// AccountChannelTotals calls fn for every (account, channel) with viewing in
// r, ordered by provider, account, channel, as rows arrive from the server.
func (s *Store) AccountChannelTotals(ctx context.Context, r stats.Range, fn func(stats.AccountChannelTotal) error) error {
	query, args := rangeQuery(`SELECT provider_id, account_id, channel_id, sumIf(seconds, live = 1), sumIf(seconds, live = 0)
		FROM {db}.viewing FINAL`, r, `GROUP BY provider_id, account_id, channel_id
		ORDER BY provider_id, account_id, channel_id`)
	var t stats.AccountChannelTotal
	targets := []any{&t.Provider, &t.Account, &t.Channel, &t.LiveSeconds, &t.DVRSeconds}
	return s.each(ctx, "read account channel totals", query, args, func(rows driver.Rows) error {
		if err := rows.Scan(targets...); err != nil {
			return err
		}
		if err := fn(t); err != nil {
			return verbatim{err}
		}
		return nil
	})
}

// ActiveAccounts returns the distinct accounts of provider with viewing on
// day d, ascending. Duplicate facts cannot change a distinct set, so no
// FINAL.
func (s *Store) ActiveAccounts(ctx context.Context, provider int64, d stats.Day) ([]int64, error) {
	var out collector[int64]
	var id int64
	err := s.each(ctx, "read active accounts",
		`SELECT DISTINCT account_id FROM {db}.viewing WHERE provider_id = ? AND date = ? ORDER BY account_id`,
		[]any{provider, d.String()}, func(rows driver.Rows) error {
			if err := rows.Scan(&id); err != nil {
				return err
			}
			out.add(id)
			return nil
		})
	return out.all(), err
}

// rangeQuery completes "SELECT ... FROM table" with the WHERE clause of r
// and tail, returning the query and its arguments. Dates are bound as
// 'YYYY-MM-DD' strings.
func rangeQuery(selectFrom string, r stats.Range, tail string) (string, []any) {
	query, args := providerQuery(selectFrom+" WHERE date >= ? AND date <= ?", r, tail)
	return query, append([]any{r.From.String(), r.To.String()}, args...)
}

// providerQuery adds the provider condition of r, if any, and tail.
func providerQuery(query string, r stats.Range, tail string) (string, []any) {
	if r.Provider == 0 {
		return query + " " + tail, nil
	}
	return query + " AND provider_id = ? " + tail, []any{r.Provider}
}

// each runs query and calls row for every result row. An unreachable server
// is retried only before the first row, so row never sees a row twice.
// Stopping early cancels the query rather than reading it to the end.
func (s *Store) each(ctx context.Context, opName, query string, args []any, row func(driver.Rows) error) error {
	return s.retry(ctx, opName, func(ctx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		rows, err := s.conn.Query(ctx, s.sql(query), args...)
		if err != nil {
			cancel()
			return err
		}
		defer func() {
			cancel()
			rows.Close()
		}()
		delivered := false
		for rows.Next() {
			if err := row(rows); err != nil {
				return err
			}
			delivered = true
		}
		if err := rows.Err(); err != nil && delivered {
			return verbatim{wrap(ctx, opName, err)}
		} else if err != nil {
			return err
		}
		return nil
	})
}
