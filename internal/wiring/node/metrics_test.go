package node_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"tvsm/internal/platform/throttle"
	"tvsm/internal/testkit/nodetest"
)

// scrape reads /metrics as the superadmin (a node without an operators'
// listener serves it to superadmins only) and returns every sample by its
// name and labels, `name{label="value",…}` with the labels sorted (no
// braces without any).
func scrape(t *testing.T, e *nodetest.Env) map[string]float64 {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.URL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(e.SuperLogin, e.SuperPassword)
	resp, err := e.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	samples := map[string]float64{}
	for name, f := range families {
		for _, m := range f.Metric {
			var labels []string
			for _, l := range m.Label {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			slices.Sort(labels)
			key := name
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				samples[key] = m.Counter.GetValue()
			case m.Gauge != nil:
				samples[key] = m.Gauge.GetValue()
			case m.Histogram != nil:
				samples[key+"_count"] = float64(m.Histogram.GetSampleCount())
				samples[key+"_sum"] = m.Histogram.GetSampleSum()
			}
		}
	}
	return samples
}

// TestMetricsAfterWorkload: given a node that served a day of work
// yesterday (catalog, accounts, a subscription, a device that watched,
// password guessing) and one write today, which closes yesterday, when
// /metrics is scraped once the projections are at the head, then every
// series an operator watches is there with the value the work implies.
func TestMetricsAfterWorkload(t *testing.T) {
	var offset atomic.Int64 // the node's clock runs this far behind
	clock := func() time.Time { return time.Now().Add(-time.Duration(offset.Load())) }
	today := time.Now().UTC().Truncate(24 * time.Hour)
	yesterday := today.AddDate(0, 0, -1)
	offset.Store(int64(time.Since(yesterday.Add(12 * time.Hour))))
	e := nodetest.StartWith(t, nodetest.Options{Clock: clock, AdminLogins: throttle.GuardOptions{LoginLimit: 3}})

	writes := 0
	create := func(path string, body map[string]any) int64 {
		t.Helper()
		status, data := e.Super(t, http.MethodPost, path, body)
		var v struct{ ID int64 }
		if status != http.StatusOK || json.Unmarshal(data, &v) != nil || v.ID == 0 {
			t.Fatalf("POST %s: %d %s", path, status, data)
		}
		writes++
		return v.ID
	}
	provider := create("/api/admin/providers", map[string]any{"name": "Metered ISP"})
	channel := create("/api/admin/channels", map[string]any{"name": "News", "number": 1})
	tariff := create("/api/admin/tariffs", map[string]any{"provider": provider, "name": "Basic", "channels": []int64{channel}})
	const pinMD5 = "81dc9bdb52d04dc20036dbd8313ed055"
	var accounts []int64
	for i := range 3 {
		accounts = append(accounts, create("/api/provider/accounts", map[string]any{
			"provider": provider, "login": fmt.Sprintf("home-%d", i), "fullname": "Home", "pin_md5": pinMD5}))
	}
	create("/api/provider/account_subscriptions", map[string]any{"account": accounts[0], "tarif": tariff,
		"start": yesterday.Add(6 * time.Hour).Format("2006-01-02T15:04:05Z")})
	status, data := e.Do(t, http.MethodPost, "/api/device/login", "", "", map[string]any{
		"provider": provider, "login": "home-0", "password_md5": pinMD5, "device": map[string]any{"unique_id": "box-1", "class": "stb"}})
	var login struct{ Token string }
	if status != http.StatusOK || json.Unmarshal(data, &login) != nil {
		t.Fatalf("device login: %d %s", status, data)
	}
	status, data = e.DoHeader(t, http.MethodPost, "/api/device/viewing", "", "", map[string]any{"sessions": []map[string]any{{
		"channel_id": channel, "mode": "live", "start": yesterday.Add(9 * time.Hour).Format("2006-01-02T15:04:05Z"), "seconds": 600}}},
		http.Header{"Authorization": {"Bearer " + login.Token}})
	if status != http.StatusNoContent {
		t.Fatalf("viewing report: %d %s", status, data)
	}
	// Guessing a password: three failures, then refusals.
	refused := 0
	for range 5 {
		if status, _ := e.Do(t, http.MethodGet, "/api/admin/providers", "mallory", "guess", nil); status == http.StatusTooManyRequests {
			refused++
		}
	}
	if refused != 2 {
		t.Fatalf("%d of 5 guesses refused, want 2 (a limit of 3)", refused)
	}

	// Today: the first write stamped today closes yesterday.
	// (The statistics see account events, not the catalog's.)
	offset.Store(0)
	create("/api/admin/channels", map[string]any{"name": "Sport", "number": 2})
	create("/api/provider/accounts", map[string]any{"provider": provider, "login": "home-3", "fullname": "Home", "pin_md5": pinMD5})
	var m map[string]float64
	deadline := time.Now().Add(30 * time.Second)
	for {
		m = scrape(t, e)
		if m["tvsm_stats_closed_through_timestamp_seconds"] > 0 && m[`tvsm_projection_lag_events{projection="statistics"}`] == 0 &&
			m[`tvsm_projection_lag_events{projection="readmodel"}`] == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("statistics did not close yesterday and catch up: %v", pick(m, "tvsm_stats_", "tvsm_projection_"))
		}
		time.Sleep(50 * time.Millisecond)
	}

	exact := map[string]float64{
		`tvsm_readmodel_entities{kind="account"}`:                                          4,
		`tvsm_readmodel_entities{kind="provider"}`:                                         1,
		`tvsm_readmodel_entities{kind="tariff"}`:                                           1,
		`tvsm_readmodel_entities{kind="channel"}`:                                          2,
		`tvsm_readmodel_entities{kind="subscription"}`:                                     1,
		`tvsm_readmodel_entities{kind="device"}`:                                           1,
		`tvsm_readmodel_entities{kind="admin"}`:                                            1,
		`tvsm_projection_lag_events{projection="readmodel"}`:                               0,
		`tvsm_projection_lag_seconds{projection="readmodel"}`:                              0,
		`tvsm_projection_lag_seconds{projection="statistics"}`:                             0,
		`tvsm_login_refusals_total{api="admin",reason="failures"}`:                         2,
		`tvsm_login_refusals_total{api="device",reason="failures"}`:                        0,
		"tvsm_stats_closed_through_timestamp_seconds":                                      float64(today.Unix()),
		`tvsm_projection_position{projection="readmodel"}`:                                 m[`tvsm_projection_position{projection="statistics"}`],
		`tvsm_login_refusals_total{api="admin",reason="busy"}`:                             0,
		`tvsm_readmodel_entities{kind="region"}`:                                           0,
		`tvsm_http_requests_total{method="GET",route="/api/admin/providers",status="429"}`: 2,
	}
	for key, want := range exact {
		if got, ok := m[key]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", key, got, ok, want)
		}
	}
	// Every write above was at least one append, durable when answered.
	atLeast := map[string]float64{
		`tvsm_eventstore_append_seconds{result="ok"}_count`:        float64(writes),
		"tvsm_eventstore_appended_events_total":                    float64(writes),
		"tvsm_eventstore_groups_total":                             1,
		`tvsm_stats_rows_written_total{table="viewing"}`:           1,
		`tvsm_stats_rows_written_total{table="subscription_days"}`: 1,
		`tvsm_stats_rows_written_total{table="class_seen"}`:        1,
	}
	for key, least := range atLeast {
		if got, ok := m[key]; !ok || got < least {
			t.Errorf("%s = %v (present %v), want at least %v", key, got, ok, least)
		}
	}
	if g, a := m["tvsm_eventstore_groups_total"], m["tvsm_eventstore_grouped_appends_total"]; a < g {
		t.Errorf("grouped appends %v fewer than groups %v", a, g)
	}
	if f, g := m["tvsm_eventstore_fsyncs_total"], m["tvsm_eventstore_groups_total"]; f < g {
		t.Errorf("fsyncs %v fewer than group commits %v: each group is fsynced", f, g)
	}
	if s, n := m[`tvsm_eventstore_append_seconds{result="ok"}_sum`], m[`tvsm_eventstore_append_seconds{result="ok"}_count`]; s <= 0 || s/n > 1 {
		t.Errorf("appends took %v s in all over %v appends: want a positive mean under a second", s, n)
	}
}

// pick returns the samples whose names start with one of prefixes.
func pick(m map[string]float64, prefixes ...string) map[string]float64 {
	out := map[string]float64{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				out[k] = m[k]
			}
		}
	}
	return out
}
