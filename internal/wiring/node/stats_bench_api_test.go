package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"tvsm/internal/testkit/nodetest"
)

// statsRange is a from/to pair of days of the Statistics API.
type statsRange struct{ from, to time.Time }

func (r statsRange) query() string {
	return "?from=" + r.from.Format(time.DateOnly) + "&to=" + r.to.Format(time.DateOnly) + "&provider_id=1"
}

// where is the bare queries' condition on r.
func (r statsRange) where() string {
	return fmt.Sprintf("date >= '%s' AND date <= '%s' AND provider_id = 1", r.from.Format(time.DateOnly), r.to.Format(time.DateOnly))
}

// subscriptionBareSQL computes the numbers of /api/stats/subscription.
func subscriptionBareSQL(db string, r statsRange) string {
	return `SELECT toUInt16(date), tariff_id, enabled, enabled_devices, active, disabled, enabled_with_devices
		FROM ` + db + `.subscription_days FINAL WHERE ` + r.where() + ` ORDER BY date, tariff_id`
}

// accountBareSQL computes the numbers of /api/stats/account.
func accountBareSQL(db string, r statsRange) string {
	return `SELECT account_id, channel_id, sumIf(seconds, live = 1), sumIf(seconds, live = 0)
		FROM ` + db + `.viewing FINAL WHERE ` + r.where() + ` GROUP BY account_id, channel_id ORDER BY account_id, channel_id`
}

// waitProjected waits until the node's statistics show the log's last day:
// every viewing fact is in ClickHouse and the API lists 2025-12-31.
func waitProjected(b *testing.B, env *nodetest.Env, conn driver.Conn, db string) {
	b.Helper()
	last := statsRange{from: e2eLast, to: e2eLast}
	deadline := time.Now().Add(15 * time.Minute)
	for {
		if countViewing(b, conn, db) == e2eWantViewingFacts {
			var answer subscriptionAnswer
			getJSON(b, env, "/api/stats/subscription"+last.query(), &answer)
			if len(answer.ProviderStat) == 1 && len(answer.ProviderStat[0].Days) == 1 {
				return
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("the node has not projected the log after 15 minutes: %+v", env.Node.StatsRunner.Stats())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type subscriptionAnswer struct {
	ProviderStat []struct {
		ProviderID int64 `json:"provider_id"`
		Days       []struct {
			Date          string `json:"date"`
			Subscriptions []struct {
				TariffID       int64  `json:"tariff_id"`
				Name           string `json:"name"`
				Enabled        int64  `json:"enabled_count"`
				EnabledDevices int64  `json:"enabled_device_count"`
				Active         int64  `json:"active_count"`
				Disabled       int64  `json:"disabled_count"`
				WithDevices    int64  `json:"enabled_account_with_devices"`
			} `json:"subscriptions"`
		} `json:"subscriptions_stat"`
	} `json:"provider_stat"`
}

type accountAnswer struct {
	ProviderStat []struct {
		ProviderID  int64 `json:"providerId"`
		AccountStat []struct {
			AccountID int64  `json:"account_id"`
			Contract  string `json:"account_contract"`
			Channels  []struct {
				ChannelID   int64   `json:"channel_id"`
				LiveHours   float64 `json:"live_hours"`
				DVRHours    float64 `json:"dvr_hours"`
				LiveMinutes int64   `json:"live_minutes"`
				DVRMinutes  int64   `json:"dvr_minutes"`
			} `json:"channels"`
		} `json:"account_stat"`
		Channels []struct {
			ID int64 `json:"id"`
		} `json:"channels"`
	} `json:"provider_stat"`
}

// checkSubscriptionAnswer checks that the API gives every row of the bare
// query, and that the first and last days hold the counts the data set
// implies (every account enabled on the first day; on the last, those the
// daily toggles left enabled).
func checkSubscriptionAnswer(b *testing.B, env *nodetest.Env, conn driver.Conn, db string, r statsRange) {
	b.Helper()
	var answer subscriptionAnswer
	getJSON(b, env, "/api/stats/subscription"+r.query(), &answer)
	if len(answer.ProviderStat) != 1 {
		b.Fatalf("%d providers in the answer, want 1", len(answer.ProviderStat))
	}
	type key struct {
		day    string
		tariff int64
	}
	type counts [5]int64
	api := map[key]counts{}
	for _, d := range answer.ProviderStat[0].Days {
		for _, s := range d.Subscriptions {
			api[key{d.Date, s.TariffID}] = counts{s.Enabled, s.EnabledDevices, s.Active, s.Disabled, s.WithDevices}
		}
	}
	days := int(r.to.Sub(r.from).Hours()/24) + 1
	if len(api) != days*e2eTariffs {
		b.Fatalf("%d (day, tariff) rows in the answer, want %d", len(api), days*e2eTariffs)
	}
	rows := 0
	each(b, conn, subscriptionBareSQL(db, r), func(rs driver.Rows) {
		var day uint16
		var t, e, ed, a, d, wd int64
		if err := rs.Scan(&day, &t, &e, &ed, &a, &d, &wd); err != nil {
			b.Fatal(err)
		}
		k := key{time.Unix(int64(day)*86400, 0).UTC().Format(time.DateOnly), t}
		if api[k] != (counts{e, ed, a, d, wd}) {
			b.Fatalf("%v: API %v, ClickHouse %v", k, api[k], counts{e, ed, a, d, wd})
		}
		rows++
	})
	if rows != len(api) {
		b.Fatalf("%d rows from ClickHouse, %d in the answer", rows, len(api))
	}
	enabled := e2eEnabledAfter(days - 1)
	for t := int64(1); t <= e2eTariffs; t++ {
		first, last := api[key{r.from.Format(time.DateOnly), t}], api[key{r.to.Format(time.DateOnly), t}]
		if first[0] != e2eAccounts/e2eTariffs || first[3] != 0 {
			b.Fatalf("tariff %d on %s: %v, want %d enabled and none disabled", t, r.from.Format(time.DateOnly), first, e2eAccounts/e2eTariffs)
		}
		if last[0] != enabled[t] || last[3] != e2eAccounts/e2eTariffs-enabled[t] {
			b.Fatalf("tariff %d on %s: %v, want %d enabled", t, r.to.Format(time.DateOnly), last, enabled[t])
		}
	}
}

// e2eEnabledAfter replays the data set's toggles of days 1..days and
// returns how many accounts of each tariff are enabled then.
func e2eEnabledAfter(days int) map[int64]int64 {
	enabled := make([]bool, e2eAccounts+1)
	for i := range enabled {
		enabled[i] = true
	}
	for day := 1; day <= days; day++ {
		e2eToggleAppends(day, e2eToggles, enabled)
	}
	out := map[int64]int64{}
	for a := int64(1); a <= e2eAccounts; a++ {
		if enabled[a] {
			out[1+a%e2eTariffs]++
		}
	}
	return out
}

// checkAccountAnswer checks that the API gives every (account, channel)
// total of the bare query, rounded as the Statistics API answers it, with
// the account's contract.
func checkAccountAnswer(b *testing.B, env *nodetest.Env, conn driver.Conn, db string, r statsRange) {
	b.Helper()
	var answer accountAnswer
	getJSON(b, env, "/api/stats/account"+r.query(), &answer)
	if len(answer.ProviderStat) != 1 || len(answer.ProviderStat[0].AccountStat) != e2eAccounts {
		b.Fatalf("the answer has %d providers, want 1 with %d accounts", len(answer.ProviderStat), e2eAccounts)
	}
	type key struct{ account, channel int64 }
	api := map[key][2]int64{}
	for _, a := range answer.ProviderStat[0].AccountStat {
		if a.Contract != "C-"+strconv.FormatInt(a.AccountID, 10) {
			b.Fatalf("account %d: contract %q", a.AccountID, a.Contract)
		}
		for _, c := range a.Channels {
			api[key{a.AccountID, c.ChannelID}] = [2]int64{c.LiveMinutes, c.DVRMinutes}
		}
	}
	rows := 0
	each(b, conn, accountBareSQL(db, r), func(rs driver.Rows) {
		var a, c, live, dvr int64
		if err := rs.Scan(&a, &c, &live, &dvr); err != nil {
			b.Fatal(err)
		}
		if want := [2]int64{(live + 30) / 60, (dvr + 30) / 60}; api[key{a, c}] != want {
			b.Fatalf("account %d channel %d: API minutes %v, ClickHouse seconds %d/%d", a, c, api[key{a, c}], live, dvr)
		}
		rows++
	})
	if rows != len(api) || rows == 0 {
		b.Fatalf("%d rows from ClickHouse, %d in the answer", rows, len(api))
	}
}

func getJSON(b *testing.B, env *nodetest.Env, path string, into any) {
	b.Helper()
	status, body := env.Super(b, http.MethodGet, path, nil)
	if status != http.StatusOK {
		b.Fatalf("GET %s: %d %.300s", path, status, body)
	}
	if err := json.Unmarshal(body, into); err != nil {
		b.Fatalf("GET %s: %v", path, err)
	}
}

func each(b *testing.B, conn driver.Conn, query string, row func(driver.Rows)) {
	b.Helper()
	rs, err := conn.Query(context.Background(), query)
	if err != nil {
		b.Fatal(err)
	}
	defer rs.Close()
	for rs.Next() {
		row(rs)
	}
	if err := rs.Err(); err != nil {
		b.Fatal(err)
	}
}

// benchAPI times GET path as the superadmin, reading the whole answer.
func benchAPI(b *testing.B, env *nodetest.Env, path string) {
	var size int64
	for b.Loop() {
		req, err := http.NewRequest(http.MethodGet, env.URL+path, nil)
		if err != nil {
			b.Fatal(err)
		}
		req.SetBasicAuth(env.SuperLogin, env.SuperPassword)
		resp, err := env.Client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		size, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
		}
	}
	b.ReportMetric(float64(size)/1e6, "MB/answer")
}

// benchBareSQL times query through a plain driver connection, scanning
// every row's columns into int64s (dates as UInt16 days): the least a
// client does to get the numbers.
func benchBareSQL(b *testing.B, conn driver.Conn, query string) {
	rows := 0
	var targets []any
	for b.Loop() {
		rows = 0
		each(b, conn, query, func(rs driver.Rows) {
			if targets == nil {
				targets = scanTargets(rs.ColumnTypes())
			}
			if err := rs.Scan(targets...); err != nil {
				b.Fatal(err)
			}
			rows++
		})
	}
	if rows == 0 {
		b.Fatal("no rows")
	}
	b.ReportMetric(float64(rows), "rows")
}

// scanTargets returns one reusable target per column.
func scanTargets(types []driver.ColumnType) []any {
	targets := make([]any, len(types))
	for i, t := range types {
		if t.DatabaseTypeName() == "UInt16" {
			targets[i] = new(uint16)
		} else {
			targets[i] = new(int64)
		}
	}
	return targets
}
