package clickhouse_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"tvsm/internal/testkit/chtest"
	"tvsm/projections/stats"
	"tvsm/projections/stats/clickhouse"
	"tvsm/projections/stats/statstest"
)

// The benchmark data set (docs/benchmarks.md): one provider, 100 tariffs,
// 100,000 accounts, 200 channels; subscription rows for every day of three
// years and viewing for the last 45 days, 4 sessions per account per day
// on the account's 12 favourite channels (18 M facts).
const (
	benchDB             = "bench_v1" // change the name when the data set changes
	benchProvider       = 1
	benchTariffs        = 100
	benchAccounts       = 100_000
	benchChannels       = 200
	benchDays           = 1096
	benchViewingDays    = 45
	benchSessions       = 4
	benchFavourites     = 12
	benchWriteBatchSize = 200_000
)

var (
	benchFirst = statstest.D("2023-01-01")
	benchLast  = benchFirst + benchDays - 1 // 2025-12-31
	// benchMonth is the 30 days AccountChannelTotals reads.
	benchMonth = stats.Range{From: benchLast - 29, To: benchLast, Provider: benchProvider}
)

var benchData struct {
	once  sync.Once
	store *clickhouse.Store
	err   error
}

// benchStore returns a store on the loaded data set. Data already in
// benchDB with the right row counts (a server named by TVSM_CLICKHOUSE_URL
// keeps it between runs) is used as it is.
func benchStore(b *testing.B) *clickhouse.Store {
	b.Helper()
	target := chtest.Shared(b)
	benchData.once.Do(func() {
		benchData.store, benchData.err = loadBenchData(b, target)
	})
	if benchData.err != nil {
		b.Fatal(benchData.err)
	}
	return benchData.store
}

func loadBenchData(b *testing.B, target *chtest.Target) (*clickhouse.Store, error) {
	ctx := context.Background()
	conn := rawConn(b)
	var subs, facts uint64
	_ = conn.QueryRow(ctx, "SELECT count() FROM "+benchDB+".subscription_days").Scan(&subs)
	_ = conn.QueryRow(ctx, "SELECT count() FROM "+benchDB+".viewing").Scan(&facts)
	if subs == benchDays*benchTariffs && facts == benchViewingDays*benchAccounts*benchSessions {
		if err := mergeBenchData(ctx, conn); err != nil {
			return nil, err
		}
		return clickhouse.Open(ctx, target.URL(benchDB))
	}
	if err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+benchDB); err != nil {
		return nil, err
	}
	s, err := clickhouse.Open(ctx, target.URL(benchDB))
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := s.WriteSubscriptionDays(ctx, benchSubscriptionRows()); err != nil {
		return nil, err
	}
	for d := benchLast - benchViewingDays + 1; d <= benchLast; d++ {
		if err := s.WriteViewing(ctx, benchViewing(d)); err != nil {
			return nil, err
		}
	}
	b.Logf("loaded %s in %s", benchDB, time.Since(start))
	if err := mergeBenchData(ctx, conn); err != nil {
		return nil, err
	}
	b.Logf("loaded and merged in %s", time.Since(start))
	return s, nil
}

// mergeBenchData merges every partition into one part, as background merges
// leave past months, so that runs measure the same thing rather than
// whatever the merges had reached. OPTIMIZE does nothing, silently, while
// a merge holds the parts, hence the loop.
func mergeBenchData(ctx context.Context, conn driver.Conn) error {
	for _, table := range []string{"subscription_days", "viewing"} {
		for attempt := 0; ; attempt++ {
			var most uint64
			if err := conn.QueryRow(ctx, `SELECT max(n) FROM (SELECT count() AS n FROM system.parts
				WHERE active AND database = ? AND table = ? GROUP BY partition)`, benchDB, table).Scan(&most); err != nil {
				return err
			}
			if most <= 1 {
				break
			}
			if attempt == 60 {
				return fmt.Errorf("%s.%s: still %d parts in a partition after %d OPTIMIZEs", benchDB, table, most, attempt)
			}
			if err := conn.Exec(ctx, "OPTIMIZE TABLE "+benchDB+"."+table+" FINAL"); err != nil {
				return err
			}
			time.Sleep(time.Second)
		}
	}
	return nil
}

func benchSubscriptionRows() []stats.SubscriptionDay {
	rng := rand.New(rand.NewPCG(1, 1))
	rows := make([]stats.SubscriptionDay, 0, benchDays*benchTariffs)
	for d := benchFirst; d <= benchLast; d++ {
		for tariff := int64(1); tariff <= benchTariffs; tariff++ {
			enabled := 500 + rng.Int64N(1000)
			rows = append(rows, stats.SubscriptionDay{Day: d, Provider: benchProvider, Tariff: tariff,
				Enabled: enabled, EnabledDevices: enabled * 3 / 2, Active: enabled * 2 / 3,
				Disabled: rng.Int64N(100), EnabledWithDevices: enabled * 9 / 10, Version: uint64(d)})
		}
	}
	return rows
}

// benchViewing returns the facts of day d: one ViewingReported event per
// account (its position) carrying benchSessions sessions (the index).
func benchViewing(d stats.Day) []stats.ViewingFact {
	rng := rand.New(rand.NewPCG(uint64(d), 2))
	classes := []string{"stb", "tv", "phone", "tablet", "web"}
	facts := make([]stats.ViewingFact, 0, benchAccounts*benchSessions)
	for a := int64(1); a <= benchAccounts; a++ {
		pos := uint64(d)*benchAccounts + uint64(a)
		for i := range int32(benchSessions) {
			device := a*2 + rng.Int64N(2)
			facts = append(facts, stats.ViewingFact{Day: d, Provider: benchProvider, Account: a,
				Device: device, Class: classes[device%int64(len(classes))],
				Channel: 1 + (a*7+rng.Int64N(benchFavourites)*13)%benchChannels, Live: rng.IntN(5) != 0,
				Seconds: 60 + rng.Int64N(3600), Position: pos, Index: i})
		}
	}
	return facts
}

// subscriptionSQL is the bare query giving SubscriptionDays' numbers.
const subscriptionSQL = `SELECT toUInt16(date), provider_id, tariff_id, enabled, enabled_devices, active, disabled,
	enabled_with_devices, version
FROM ` + benchDB + `.subscription_days FINAL
WHERE date >= '2023-01-01' AND date <= '2025-12-31' AND provider_id = 1
ORDER BY provider_id, date, tariff_id`

// accountSQL is the bare query giving AccountChannelTotals' numbers.
const accountSQL = `SELECT provider_id, account_id, channel_id, sumIf(seconds, live = 1), sumIf(seconds, live = 0)
FROM ` + benchDB + `.viewing FINAL
WHERE date >= '2025-12-02' AND date <= '2025-12-31' AND provider_id = 1
GROUP BY provider_id, account_id, channel_id
ORDER BY provider_id, account_id, channel_id`

func BenchmarkSubscriptionDays(b *testing.B) {
	s := benchStore(b)
	r := stats.Range{From: benchFirst, To: benchLast, Provider: benchProvider}
	b.Run("store", func(b *testing.B) {
		rows := 0
		for b.Loop() {
			rows = 0
			if err := s.SubscriptionDays(b.Context(), r, func(stats.SubscriptionDay) error {
				rows++
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
		reportRows(b, rows, benchDays*benchTariffs)
	})
	b.Run("bare", func(b *testing.B) {
		var d uint16
		var p, t, e, ed, a, dis, ewd int64
		var v uint64
		benchBare(b, subscriptionSQL, benchDays*benchTariffs, &d, &p, &t, &e, &ed, &a, &dis, &ewd, &v)
	})
}

func BenchmarkAccountChannelTotals(b *testing.B) {
	s := benchStore(b)
	if got := benchMonth.From.String(); got != "2025-12-02" {
		b.Fatalf("the bare query's range starts on 2025-12-02, the store's on %s", got)
	}
	b.Run("store", func(b *testing.B) {
		rows := 0
		for b.Loop() {
			rows = 0
			if err := s.AccountChannelTotals(b.Context(), benchMonth, func(stats.AccountChannelTotal) error {
				rows++
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
		reportRows(b, rows, 0)
	})
	b.Run("bare", func(b *testing.B) {
		var p, a, c, live, dvr int64
		benchBare(b, accountSQL, 0, &p, &a, &c, &live, &dvr)
	})
}

// benchBare times query through a plain driver connection, scanning every
// row into targets: the least a client does to get the numbers.
func benchBare(b *testing.B, query string, want int, targets ...any) {
	conn := rawConn(b)
	rows := 0
	for b.Loop() {
		rows = 0
		q, err := conn.Query(b.Context(), query)
		if err != nil {
			b.Fatal(err)
		}
		for q.Next() {
			if err := q.Scan(targets...); err != nil {
				b.Fatal(err)
			}
			rows++
		}
		if err := q.Err(); err != nil {
			b.Fatal(err)
		}
		q.Close()
	}
	reportRows(b, rows, want)
}

// reportRows reports the rows of the last answer, failing on a wrong count
// (want 0: any non-zero count).
func reportRows(b *testing.B, rows, want int) {
	b.Helper()
	if rows == 0 || (want != 0 && rows != want) {
		b.Fatalf("%d rows, want %d", rows, want)
	}
	b.ReportMetric(float64(rows), "rows")
}

// BenchmarkWriteViewing writes batches of 200,000 new facts through
// WriteViewing from 1, 2 and 4 goroutines at once.
func BenchmarkWriteViewing(b *testing.B) {
	for _, writers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s := openURL(b, chtest.Shared(b).URL(fmt.Sprintf("bench_write_%d", writers)))
			batches := make([][]stats.ViewingFact, writers)
			for w := range batches {
				batches[w] = benchViewing(benchLast - stats.Day(w))[:benchWriteBatchSize]
			}
			start := time.Now()
			var written int
			for b.Loop() {
				var wg sync.WaitGroup
				for _, batch := range batches {
					for i := range batch {
						batch[i].Position += benchAccounts * benchDays // new facts each time
					}
					wg.Go(func() {
						if err := s.WriteViewing(b.Context(), batch); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
				written += writers * benchWriteBatchSize
			}
			b.ReportMetric(float64(written)/time.Since(start).Seconds(), "facts/s")
		})
	}
}
