package console_test

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// subscriptionAnswer is the Statistics API's subscription answer.
type subscriptionAnswer struct {
	ProviderStat []struct {
		ProviderID        int64 `json:"provider_id"`
		SubscriptionsStat []struct {
			Date          string `json:"date"`
			Subscriptions []struct {
				TariffID                  int64  `json:"tariff_id"`
				Name                      string `json:"name"`
				EnabledCount              int64  `json:"enabled_count"`
				EnabledDeviceCount        int64  `json:"enabled_device_count"`
				ActiveCount               int64  `json:"active_count"`
				DisabledCount             int64  `json:"disabled_count"`
				EnabledAccountWithDevices int64  `json:"enabled_account_with_devices"`
			} `json:"subscriptions"`
		} `json:"subscriptions_stat"`
	} `json:"provider_stat"`
}

// chartData is what a line chart keeps on its element.
type chartData struct {
	Days   []string `json:"days"`
	Series []struct {
		ID     int64    `json:"id"`
		Label  string   `json:"label"`
		Values []*int64 `json:"values"`
	} `json:"series"`
}

// series returns, per tariff id, its value for each day of days (nil
// without a row), as the chart should show it.
func (a subscriptionAnswer) series(days []string, value func(enabled, active int64) int64) map[int64][]*int64 {
	out := map[int64][]*int64{}
	for _, p := range a.ProviderStat {
		for _, d := range p.SubscriptionsStat {
			i := slices.Index(days, d.Date)
			for _, s := range d.Subscriptions {
				if out[s.TariffID] == nil {
					out[s.TariffID] = make([]*int64, len(days))
				}
				v := value(s.EnabledCount, s.ActiveCount)
				out[s.TariffID][i] = &v
			}
		}
	}
	return out
}

// days lists the answer's days in order.
func (a subscriptionAnswer) days() []string {
	var days []string
	for _, p := range a.ProviderStat {
		for _, d := range p.SubscriptionsStat {
			if !slices.Contains(days, d.Date) {
				days = append(days, d.Date)
			}
		}
	}
	slices.Sort(days)
	return days
}

// csvRows is the answer as the console's subscriptions.csv should hold it.
func (a subscriptionAnswer) csvRows() [][]string {
	rows := [][]string{{"provider_id", "date", "tariff_id", "name", "enabled_count", "disabled_count", "active_count", "enabled_device_count", "enabled_account_with_devices"}}
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, p := range a.ProviderStat {
		for _, d := range p.SubscriptionsStat {
			for _, s := range d.Subscriptions {
				rows = append(rows, []string{n(p.ProviderID), d.Date, n(s.TariffID), s.Name, n(s.EnabledCount), n(s.DisabledCount),
					n(s.ActiveCount), n(s.EnabledDeviceCount), n(s.EnabledAccountWithDevices)})
			}
		}
	}
	return rows
}

// chartSeries is a chart's data keyed by tariff id.
func (c chartData) byID() map[int64][]*int64 {
	out := map[int64][]*int64{}
	for _, s := range c.Series {
		out[s.ID] = s.Values
	}
	return out
}

func deref(m map[int64][]*int64) map[int64][]string {
	out := map[int64][]string{}
	for id, vs := range m {
		for _, v := range vs {
			if v == nil {
				out[id] = append(out[id], "-")
			} else {
				out[id] = append(out[id], strconv.FormatInt(*v, 10))
			}
		}
	}
	return out
}

// checkCharts compares the statistics page's charts and CSV with the
// Statistics API's answers for the same range.
func checkCharts(t *testing.T, b *tab, w *world) {
	t.Helper()
	rangeQuery := fmt.Sprintf("from=%s&to=%s&provider_id=%d", w.dayA, w.dayB, w.acme)
	status, data := w.env.Super(t, http.MethodGet, "/api/stats/subscription?"+rangeQuery, nil)
	if status != http.StatusOK {
		t.Fatalf("stats: %d %s", status, data)
	}
	var api subscriptionAnswer
	if err := json.Unmarshal(data, &api); err != nil {
		t.Fatal(err)
	}
	days := api.days()
	if !reflect.DeepEqual(days, []string{w.dayA, w.dayB}) {
		t.Fatalf("the API shows days %v, want %s and %s closed", days, w.dayA, w.dayB)
	}
	for _, c := range []struct {
		chart string
		value func(enabled, active int64) int64
	}{
		{"chart-subscriptions", func(e, _ int64) int64 { return e }},
		{"chart-active", func(_, a int64) int64 { return a }},
	} {
		var got chartData
		raw := evaluate[string](b, `JSON.stringify(document.getElementById('`+c.chart+`').chartData)`)
		if err := json.Unmarshal([]byte(raw), &got); err != nil {
			t.Fatalf("%s: %v", c.chart, err)
		}
		want := deref(api.series(days, c.value))
		if !reflect.DeepEqual(got.Days, days) || !reflect.DeepEqual(deref(got.byID()), want) {
			t.Errorf("%s shows days %v series %v; the API says days %v series %v", c.chart, got.Days, deref(got.byID()), days, want)
		}
	}
	// The data is not trivial: Basic had two enabled subscribers yesterday
	// (Alice, and Bob's second subscription; Carol was disabled), and
	// Premium's Bob watched.
	basic := deref(api.series(days, func(e, _ int64) int64 { return e }))[w.basic]
	if !reflect.DeepEqual(basic, []string{"2", "2"}) {
		t.Errorf("Basic's enabled subscribers %v, want [2 2]", basic)
	}

	// The CSV the page offers holds the API's numbers.
	evaluate[bool](b, `(() => { window.__blobs = []; const orig = URL.createObjectURL;
		URL.createObjectURL = (b) => { window.__blobs.push(b); return orig(b) }; return true })()`)
	if !evaluate[bool](b, `(document.querySelector('[data-csv="subscriptions.csv"]').click(), window.__blobs.length === 1)`) {
		t.Fatal("the CSV button made no file")
	}
	text := evaluate[string](b, `window.__blobs[0].text()`)
	rows, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil {
		t.Fatalf("subscriptions.csv: %v\n%s", err, text)
	}
	if want := api.csvRows(); !reflect.DeepEqual(rows, want) {
		t.Errorf("subscriptions.csv:\n%v\nthe API:\n%v", rows, want)
	}

	// Viewing minutes by class, as the device statistic says.
	_, data = w.env.Super(t, http.MethodGet, "/api/stats/device?"+rangeQuery, nil)
	var dev struct {
		ProviderStat []struct {
			DeviceStat []struct {
				Class         string `json:"class"`
				LiveMinutes   int64  `json:"live_minutes"`
				DvrMinutes    int64  `json:"dvr_minutes"`
				UniqueDevices int64  `json:"unique_devices"`
			} `json:"device_stat"`
		} `json:"provider_stat"`
	}
	if err := json.Unmarshal(data, &dev); err != nil {
		t.Fatal(err)
	}
	var wantClasses []string
	for _, c := range dev.ProviderStat[0].DeviceStat {
		wantClasses = append(wantClasses, fmt.Sprintf("%s %d %d %d", c.Class, c.LiveMinutes, c.DvrMinutes, c.UniqueDevices))
	}
	gotClasses := evaluate[[]string](b, `document.getElementById('chart-classes').chartData.map(c => [c.class, c.live_minutes, c.dvr_minutes, c.unique_devices].join(' '))`)
	if !reflect.DeepEqual(gotClasses, wantClasses) {
		t.Errorf("device classes chart %v, API %v", gotClasses, wantClasses)
	}
	if !slices.Contains(gotClasses, "tv 90 0 1") {
		t.Errorf("device classes %v: want Bob's tv with 30 + 60 minutes", gotClasses)
	}
	top := evaluate[[]string](b, `document.getElementById('chart-channels').chartData.map(c => c.name + ' ' + (c.live + c.dvr))`)
	if !reflect.DeepEqual(top, []string{"News 24 60", "Sport One 30", "Kids 10"}) {
		t.Errorf("top channels %v", top)
	}
}
