package demo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"tvsm/eventstore/embedded"
	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/tools/demo"
)

// Given a demo run in the minute after midnight, when its statistics
// cannot yet close the day before by the clock (a day closes a grace
// after its midnight), then the demo still closes every day of its
// history: its last day is yesterday's.
func TestDemoClosesYesterdayRightAfterMidnight(t *testing.T) {
	dir := t.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	today := time.Now().UTC().Truncate(24 * time.Hour)
	res, err := demo.Run(context.Background(), demo.Options{
		DataDir: filepath.Join(dir, "node"), Store: store, Days: 2, Accounts: 5, Providers: 1, Tariffs: 1, Channels: 3, Seed: 5,
		AdminLogin: nodetest.SuperLogin, AdminPassword: nodetest.SuperPassword,
		Now: func() time.Time { return today.Add(30 * time.Second) },
	})
	if cerr := store.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if yesterday := today.AddDate(0, 0, -1).Format(time.DateOnly); res.ClosedThrough != yesterday || res.To.Format(time.DateOnly) != yesterday {
		t.Fatalf("demo run at 00:00:30: history to %s, closed through %s; want both %s", res.To.Format(time.DateOnly), res.ClosedThrough, yesterday)
	}
}

// TestDemoStatistics writes a small demo history and checks that its
// statistics, as the demo left them, equal those of a rebuild from its log
// and those recomputed from the Provider API, both from the account
// histories and from its reads as of each day's end.
func TestDemoStatistics(t *testing.T) {
	dir := t.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// One reading of the time for the demo and for what is expected of it,
	// so that a midnight passing during the run moves neither.
	now := time.Now()
	res, err := demo.Run(context.Background(), demo.Options{
		DataDir: filepath.Join(dir, "node"), Store: store, Days: 6, Accounts: 90, Providers: 2, Tariffs: 5, Channels: 12, Seed: 3,
		AdminLogin: nodetest.SuperLogin, AdminPassword: nodetest.SuperPassword, Now: func() time.Time { return now },
	})
	if cerr := store.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	today := now.UTC().Truncate(24 * time.Hour)
	from, to := today.AddDate(0, 0, -6).Format(time.DateOnly), today.AddDate(0, 0, -1).Format(time.DateOnly)
	if res.ClosedThrough != to || res.From.Format(time.DateOnly) != from || res.Accounts != 90 || res.Reports == 0 || res.Ended == 0 {
		t.Fatalf("demo result %+v, want 90 accounts, viewing, ended subscriptions and days %s to %s closed", res, from, to)
	}
	rangeQuery := "?from=" + from + "&to=" + to

	// As the demo left them: a node restored from the demo's snapshots.
	env := nodetest.StartWith(t, nodetest.Options{Dir: dir})
	live := answers(t, env, rangeQuery)
	checkEveryClass(t, live["device"])
	fromHistory := recompute(t, env, from, to)
	fromAsOf := recomputeAsOf(t, env, from, to)
	env.Close()

	// Rebuilt: the statistics recomputed from the log.
	if err := os.RemoveAll(filepath.Join(dir, "node", "stats")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "node", "stats-embedded.snapshot")); err != nil {
		t.Fatal(err)
	}
	env = nodetest.StartWith(t, nodetest.Options{Dir: dir})
	head, err := env.Store.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := env.Node.StatsRunner.Progress().Wait(ctx, head); err != nil {
		t.Fatal(err)
	}
	// The scheduler closes days by the clock only once the runner says it
	// caught up, which it records just after applying the head.
	for !env.Node.StatsRunner.Stats().CaughtUp {
		if ctx.Err() != nil {
			t.Fatal("the statistics runner applied the head but never reported caught up")
		}
		time.Sleep(10 * time.Millisecond)
	}
	env.Node.StatsScheduler.CloseDue() // a replay closes the last day by the clock, as live
	rebuilt := answers(t, env, rangeQuery)
	for kind, body := range live {
		if rebuilt[kind] != body {
			t.Errorf("%s statistics differ after a rebuild from the log:\ndemo:    %.600s\nrebuilt: %.600s", kind, body, rebuilt[kind])
		}
	}

	// Recomputed from the Provider API: every account's history folded to
	// each day's end gives the subscription counts (viewing, and so
	// active_count, is not in the Provider API).
	got := subscriptionCounts(t, live["subscription"])
	if !equalCounts(got, fromHistory) {
		t.Errorf("subscription statistics differ from the account histories:\nstatistics: %v\nhistories:  %v", got, fromHistory)
	}
	if !equalCounts(got, fromAsOf) {
		t.Errorf("subscription statistics differ from the Provider API's as_of reads:\nstatistics: %v\nas_of:      %v", got, fromAsOf)
	}
	if len(fromHistory) < 10 {
		t.Fatalf("the histories gave %d tariff-days with subscribers; the comparison proves little", len(fromHistory))
	}
	t.Logf("demo %+v; %d tariff-days compared", res.Counts, len(fromHistory))
}

// answers reads the three statistics for the range as the superadmin.
func answers(t *testing.T, env *nodetest.Env, rangeQuery string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, kind := range []string{"subscription", "device", "account"} {
		status, body := env.Super(t, http.MethodGet, "/api/stats/"+kind+rangeQuery, nil)
		if status != http.StatusOK {
			t.Fatalf("%s: %d %s", kind, status, body)
		}
		out[kind] = string(body)
	}
	return out
}

func checkEveryClass(t *testing.T, deviceAnswer string) {
	t.Helper()
	for _, class := range []string{"stb", "tv", "phone", "tablet", "web"} {
		if !regexp.MustCompile(`"class":"` + class + `","live_hours":[0-9.]+,"dvr_hours":[0-9.]+,"live_minutes":[1-9]`).MatchString(deviceAnswer) {
			t.Errorf("no viewing of class %s in %s", class, deviceAnswer)
		}
	}
}

// dayCounts are one tariff's counts on one day: enabled, disabled,
// enabled devices, enabled accounts with devices.
type dayCounts [4]int64

type countKey struct {
	day    string
	tariff int64
}

func subscriptionCounts(t *testing.T, body string) map[countKey]dayCounts {
	t.Helper()
	var a struct {
		ProviderStat []struct {
			SubscriptionsStat []struct {
				Date          string `json:"date"`
				Subscriptions []struct {
					TariffID                  int64 `json:"tariff_id"`
					EnabledCount              int64 `json:"enabled_count"`
					DisabledCount             int64 `json:"disabled_count"`
					EnabledDeviceCount        int64 `json:"enabled_device_count"`
					EnabledAccountWithDevices int64 `json:"enabled_account_with_devices"`
				} `json:"subscriptions"`
			} `json:"subscriptions_stat"`
		} `json:"provider_stat"`
	}
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatal(err)
	}
	out := map[countKey]dayCounts{}
	for _, p := range a.ProviderStat {
		for _, d := range p.SubscriptionsStat {
			for _, s := range d.Subscriptions {
				out[countKey{d.Date, s.TariffID}] = dayCounts{s.EnabledCount, s.DisabledCount, s.EnabledDeviceCount, s.EnabledAccountWithDevices}
			}
		}
	}
	return out
}

// equalCounts compares, ignoring rows of zeros (a tariff without
// subscribers has a row of zeros in the statistics).
func equalCounts(a, b map[countKey]dayCounts) bool {
	for _, m := range []map[countKey]dayCounts{a, b} {
		for k, v := range m {
			if v == (dayCounts{}) {
				delete(m, k)
			}
		}
	}
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// historyEntry is one entry of GET /api/provider/accounts/{id}/history.
type historyEntry struct {
	Type    string `json:"type"`
	Time    string `json:"time"`
	Changes []struct {
		Field string `json:"field"`
		New   any    `json:"new"`
	} `json:"changes"`
}

// accountAt is an account folded from its history.
type accountAt struct {
	enabled, deleted bool
	subs             map[string]map[string]any // by "subscriptions[N]": tarif, start, stop
	devices          map[string]bool           // bound, by "devices[N]"
}

var itemField = regexp.MustCompile(`^((?:subscriptions|devices)\[\d+\])\.(.+)$`)

// recompute folds every account's history (the change feed names every
// account that ever existed) to the end of each day from..to and counts
// subscribers per tariff as the statistics define them.
func recompute(t *testing.T, env *nodetest.Env, from, to string) map[countKey]dayCounts {
	t.Helper()
	var ids []int64
	for after := ""; ; {
		status, body := env.Super(t, http.MethodGet, "/api/provider/changes?limit=1000&after="+after, nil)
		if status != http.StatusOK {
			t.Fatalf("changes: %d %s", status, body)
		}
		var feed struct {
			Data []struct {
				Entity string `json:"entity"`
				ID     int64  `json:"id"`
			} `json:"data"`
			Next string `json:"next"`
		}
		if err := json.Unmarshal(body, &feed); err != nil {
			t.Fatal(err)
		}
		for _, c := range feed.Data {
			if c.Entity == "account" && !slices.Contains(ids, c.ID) {
				ids = append(ids, c.ID)
			}
		}
		if len(feed.Data) == 0 || feed.Next == after {
			break
		}
		after = feed.Next
	}
	histories := map[int64][]historyEntry{}
	for _, id := range ids {
		status, body := env.Super(t, http.MethodGet, fmt.Sprintf("/api/provider/accounts/%d/history", id), nil)
		var h struct{ Data []historyEntry }
		if status != http.StatusOK || json.Unmarshal(body, &h) != nil {
			t.Fatalf("history of %d: %d %s", id, status, body)
		}
		histories[id] = h.Data
	}
	out := map[countKey]dayCounts{}
	start, _ := time.Parse(time.DateOnly, from)
	last, _ := time.Parse(time.DateOnly, to)
	for day := start; !day.After(last); day = day.AddDate(0, 0, 1) {
		end := day.AddDate(0, 0, 1)
		for _, h := range histories {
			a := fold(t, h, end)
			if a.deleted || a.subs == nil {
				continue
			}
			tariffs := map[int64]bool{}
			for _, s := range a.subs {
				started := parseTime(t, s["start"]).Before(end)
				stopped := s["stop"] != nil && parseTime(t, s["stop"]).Before(end)
				if started && !stopped {
					tariffs[int64(s["tarif"].(float64))] = true
				}
			}
			for tariff := range tariffs {
				k := countKey{day.Format(time.DateOnly), tariff}
				c := out[k]
				if a.enabled {
					c[0]++
					c[2] += int64(len(a.devices))
					if len(a.devices) > 0 {
						c[3]++
					}
				} else {
					c[1]++
				}
				out[k] = c
			}
		}
	}
	return out
}

// recomputeAsOf counts subscribers per tariff at the end of each day
// from..to from the Provider API's reads as of that moment: the accounts
// then (enabled or not), and each one's subscriptions and devices then.
func recomputeAsOf(t *testing.T, env *nodetest.Env, from, to string) map[countKey]dayCounts {
	t.Helper()
	get := func(path string, out any) {
		t.Helper()
		status, body := env.Super(t, http.MethodGet, path, nil)
		if status != http.StatusOK || json.Unmarshal(body, out) != nil {
			t.Fatalf("GET %s: %d %.300s", path, status, body)
		}
	}
	out := map[countKey]dayCounts{}
	start, _ := time.Parse(time.DateOnly, from)
	last, _ := time.Parse(time.DateOnly, to)
	for day := start; !day.After(last); day = day.AddDate(0, 0, 1) {
		end := day.AddDate(0, 0, 1)
		// The last instant of the day: every event before midnight.
		asOf := url.QueryEscape(end.Add(-time.Nanosecond).Format("2006-01-02T15:04:05.999999999-0700"))
		var accounts struct {
			Data []struct {
				ID      int64 `json:"id"`
				Enabled bool  `json:"enabled"`
			} `json:"data"`
		}
		get("/api/provider/accounts?limit=0&as_of="+asOf, &accounts)
		for _, a := range accounts.Data {
			var subs struct {
				Data []struct {
					Tarif int64   `json:"tarif"`
					Start string  `json:"start"`
					Stop  *string `json:"stop"`
				} `json:"data"`
			}
			get(fmt.Sprintf("/api/provider/account_subscriptions?limit=0&account=%d&as_of=%s", a.ID, asOf), &subs)
			var devices struct{ Total int64 }
			get(fmt.Sprintf("/api/provider/devices?limit=1&account=%d&as_of=%s", a.ID, asOf), &devices)
			tariffs := map[int64]bool{}
			for _, s := range subs.Data {
				if parseTime(t, s.Start).Before(end) && (s.Stop == nil || !parseTime(t, *s.Stop).Before(end)) {
					tariffs[s.Tarif] = true
				}
			}
			for tariff := range tariffs {
				k := countKey{day.Format(time.DateOnly), tariff}
				c := out[k]
				if a.Enabled {
					c[0]++
					c[2] += devices.Total
					if devices.Total > 0 {
						c[3]++
					}
				} else {
					c[1]++
				}
				out[k] = c
			}
		}
	}
	return out
}

// fold applies the entries of h stamped before end.
func fold(t *testing.T, h []historyEntry, end time.Time) accountAt {
	a := accountAt{subs: map[string]map[string]any{}, devices: map[string]bool{}}
	for _, e := range h {
		if !parseTime(t, e.Time).Before(end) {
			break
		}
		if e.Type == "AccountDeleted.v1" {
			a.deleted = true
		}
		for _, c := range e.Changes {
			if c.Field == "enabled" {
				a.enabled = c.New.(bool)
				continue
			}
			m := itemField.FindStringSubmatch(c.Field)
			switch {
			case m == nil:
			case m[1][0] == 'd' && m[2] == "unique_id":
				if c.New == nil {
					delete(a.devices, m[1])
				} else {
					a.devices[m[1]] = true
				}
			case m[1][0] == 's':
				if a.subs[m[1]] == nil {
					a.subs[m[1]] = map[string]any{}
				}
				a.subs[m[1]][m[2]] = c.New
				if m[2] == "tarif" && c.New == nil {
					delete(a.subs, m[1])
				}
			}
		}
	}
	return a
}

func parseTime(t *testing.T, v any) time.Time {
	s, _ := v.(string)
	tm, err := time.Parse("2006-01-02T15:04:05-0700", s)
	if err != nil {
		t.Fatalf("time %v: %v", v, err)
	}
	return tm
}
