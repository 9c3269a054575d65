package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"tvsm/projections/stats"
)

// maxBatchRows bounds one INSERT; larger writes are split. ClickHouse wants
// few large inserts (10k–100k+ rows each), and the driver holds a batch in
// memory until Send.
var maxBatchRows = 200_000

// WriteSubscriptionDays upserts rows keyed by (provider, day, tariff).
func (s *Store) WriteSubscriptionDays(ctx context.Context, rows []stats.SubscriptionDay) error {
	if err := checkDays(rows, func(r stats.SubscriptionDay) stats.Day { return r.Day }); err != nil {
		return err
	}
	return chunked(rows, func(rows []stats.SubscriptionDay) error {
		return s.insert(ctx, "write subscription days", `INSERT INTO {db}.subscription_days
			(date, provider_id, tariff_id, enabled, enabled_devices, active, disabled, enabled_with_devices, version)`,
			subscriptionColumns(rows))
	})
}

func subscriptionColumns(rows []stats.SubscriptionDay) columns {
	n := len(rows)
	dates, versions := make([]time.Time, n), make([]uint64, n)
	providers, tariffs, enabled, devices, active, disabled, withDevices :=
		make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n),
		make([]int64, n), make([]int64, n), make([]int64, n)
	for i, r := range rows {
		dates[i], providers[i], tariffs[i], versions[i] = dayTime(r.Day), r.Provider, r.Tariff, r.Version
		enabled[i], devices[i], active[i] = r.Enabled, r.EnabledDevices, r.Active
		disabled[i], withDevices[i] = r.Disabled, r.EnabledWithDevices
	}
	return columns{dates, providers, tariffs, enabled, devices, active, disabled, withDevices, versions}
}

// WriteViewing upserts facts keyed by (position, index).
func (s *Store) WriteViewing(ctx context.Context, facts []stats.ViewingFact) error {
	if err := checkDays(facts, func(f stats.ViewingFact) stats.Day { return f.Day }); err != nil {
		return err
	}
	return chunked(facts, func(facts []stats.ViewingFact) error {
		return s.insert(ctx, "write viewing", `INSERT INTO {db}.viewing
			(date, provider_id, account_id, channel_id, device_id, class, live, seconds, position, idx)`,
			viewingColumns(facts))
	})
}

func viewingColumns(facts []stats.ViewingFact) columns {
	n := len(facts)
	dates, classes := make([]time.Time, n), make([]string, n)
	providers, accounts, channels, devices, seconds :=
		make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	live, positions, idx := make([]uint8, n), make([]uint64, n), make([]int32, n)
	for i, f := range facts {
		dates[i], providers[i], accounts[i], channels[i] = dayTime(f.Day), f.Provider, f.Account, f.Channel
		devices[i], classes[i], seconds[i] = f.Device, f.Class, f.Seconds
		positions[i], idx[i] = f.Position, f.Index
		if f.Live {
			live[i] = 1
		}
	}
	return columns{dates, providers, accounts, channels, devices, classes, live, seconds, positions, idx}
}

// WriteClassSeen records first-seen days. Rows no earlier than a day this
// store already wrote for their (provider, class) change nothing (reads take
// the minimum), so they are not sent: connections report their class often.
func (s *Store) WriteClassSeen(ctx context.Context, rows []stats.DeviceClassSeen) error {
	if err := checkDays(rows, func(r stats.DeviceClassSeen) stats.Day { return r.Day }); err != nil {
		return err
	}
	fresh := s.unseen(rows)
	if len(fresh) == 0 {
		return nil
	}
	providers, classes, dates := make([]int64, len(fresh)), make([]string, len(fresh)), make([]time.Time, len(fresh))
	for i, r := range fresh {
		providers[i], classes[i], dates[i] = r.Provider, r.Class, dayTime(r.Day)
	}
	cols := columns{providers, classes, dates}
	if err := s.insert(ctx, "write class seen", "INSERT INTO {db}.class_seen (provider_id, class, date)", cols); err != nil {
		return err
	}
	s.remember(fresh)
	return nil
}

type classKey struct {
	provider int64
	class    string
}

// unseen returns the earliest row per key among rows, leaving out keys
// already known on an earlier or equal day.
func (s *Store) unseen(rows []stats.DeviceClassSeen) []stats.DeviceClassSeen {
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	earliest := make(map[classKey]int)
	var fresh []stats.DeviceClassSeen
	for _, r := range rows {
		k := classKey{r.Provider, r.Class}
		if known, ok := s.seen[k]; ok && known <= r.Day {
			continue
		}
		if i, ok := earliest[k]; ok {
			fresh[i].Day = min(fresh[i].Day, r.Day)
			continue
		}
		earliest[k] = len(fresh)
		fresh = append(fresh, r)
	}
	return fresh
}

// remember notes days now stored.
func (s *Store) remember(rows []stats.DeviceClassSeen) {
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	for _, r := range rows {
		k := classKey{r.Provider, r.Class}
		if known, ok := s.seen[k]; !ok || r.Day < known {
			s.seen[k] = r.Day
		}
	}
}

// columns holds one slice per column of an INSERT, in its column order.
type columns []any

// insert sends cols as one batch. The batch is built again from cols on
// every attempt: a batch is single-use, even after a failed Send, and tied
// to its connection (https://github.com/ClickHouse/clickhouse-go/issues/529,
// https://github.com/ClickHouse/clickhouse-go/issues/728). Every error path
// aborts the batch so its connection goes back to the pool.
func (s *Store) insert(ctx context.Context, opName, query string, cols columns) error {
	return s.retry(ctx, opName, func(ctx context.Context) error {
		batch, err := s.conn.PrepareBatch(ctx, s.sql(query))
		if err != nil {
			return err
		}
		if err := appendColumns(batch, cols); err != nil {
			_ = batch.Abort()
			return err
		}
		if err := batch.Send(); err != nil {
			_ = batch.Abort()
			return err
		}
		return nil
	})
}

func appendColumns(batch driver.Batch, cols columns) error {
	for i, col := range cols {
		if err := batch.Column(i).Append(col); err != nil {
			return err
		}
	}
	return nil
}

// chunked calls write for successive pieces of at most maxBatchRows rows.
func chunked[T any](rows []T, write func([]T) error) error {
	for len(rows) > 0 {
		n := min(len(rows), maxBatchRows)
		if err := write(rows[:n]); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// maxDay (2105-12-31) is the last day a Date column holds and 18.16 also
// parses from a string; the driver would wrap a later one, or one before
// 1970, into a wrong date.
const maxDay = 49672

// checkDays refuses rows whose day a Date column cannot hold.
func checkDays[T any](rows []T, day func(T) stats.Day) error {
	for _, r := range rows {
		if d := day(r); d < 0 || d > maxDay {
			return fmt.Errorf("stats: clickhouse: day %v outside 1970-01-01..2105-12-31", d)
		}
	}
	return nil
}

// dayTime is d as the UTC midnight the driver encodes into a Date column.
func dayTime(d stats.Day) time.Time { return time.Unix(int64(d)*86400, 0).UTC() }
