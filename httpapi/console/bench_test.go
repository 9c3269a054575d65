package console_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"tvsm/eventstore/embedded"
	"tvsm/internal/testkit/browser"
	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/tools/demo"
)

// writeDemo writes a demo history into dir (laid out as nodetest expects)
// and returns its first and last closed days.
func writeDemo(t testing.TB, dir string, o demo.Options) (from, to string) {
	t.Helper()
	store, err := embedded.Open(filepath.Join(dir, "events"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o.DataDir, o.Store = filepath.Join(dir, "node"), store
	o.AdminLogin, o.AdminPassword = nodetest.SuperLogin, nodetest.SuperPassword
	res, err := demo.Run(context.Background(), o)
	if cerr := store.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return res.From.Format(time.DateOnly), res.ClosedThrough
}

// BenchmarkStatisticsChart times the statistics page over three years of
// daily data for 100 tariffs (a demo history of 1,096 days, one provider,
// 100 tariffs, 200 accounts) in headless Chromium: from opening the range
// to every chart drawn (the page's own measure, performance.now()), beside
// its reference measured in the same tab just before each render: fetching
// and parsing the subscription statistic alone, which the page must do
// anyway.
//
//	go test -run '^$' -bench StatisticsChart -benchtime 7x ./httpapi/console/
//
// Reported: render and reference min/median/max in ms, and the median
// ratio.
func BenchmarkStatisticsChart(b *testing.B) {
	dir := b.TempDir()
	from, to := writeDemo(b, dir, demo.Options{Days: 1096, Accounts: 200, Providers: 1, Tariffs: 100, Seed: 11})
	env := nodetest.StartWith(b, nodetest.Options{Dir: dir})
	ctx := browser.Start(b, browser.Options{Width: 1280, Height: 900})
	tb := &tab{t: b, ctx: ctx, url: env.URL, shots: b.TempDir()}
	tb.signIn(env.SuperLogin, env.SuperPassword)
	api := fmt.Sprintf("/api/stats/subscription?from=%s&to=%s&provider_id=1", from, to)
	reference := fmt.Sprintf(`(async () => {
		const t0 = performance.now()
		const r = await fetch(%q, { headers: { Authorization: 'Basic ' + btoa(%q) }, credentials: 'omit', cache: 'no-store' })
		const j = JSON.parse(await r.text())
		if (j.provider_stat[0].subscriptions_stat.length < 1096 || j.provider_stat[0].subscriptions_stat[0].subscriptions.length !== 100) throw new Error('not 3 years of 100 tariffs')
		return performance.now() - t0 })()`, api, env.SuperLogin+":"+env.SuperPassword)
	var renders, refs []float64
	i := 0
	for b.Loop() {
		i++
		refs = append(refs, evaluate[float64](tb, reference))
		evaluate[bool](tb, fmt.Sprintf(`(location.hash = '#/stats?from=%s&to=%s&provider=1&run=%d', true)`, from, to, i))
		tb.wait(fmt.Sprintf(`location.hash.endsWith('run=%d') && document.querySelector('.charts')?.dataset.state === 'ready'`, i))
		renders = append(renders, evaluate[float64](tb, `Number(document.querySelector('.charts').dataset.renderMs)`))
		if n := evaluate[int](tb, `document.getElementById('chart-subscriptions').chartData.series.length`); n != 100 {
			b.Fatalf("the chart shows %d tariffs, want 100", n)
		}
	}
	browser.Screenshot(b, ctx, browser.ScreenshotDir(b), "stats-3-years")
	slices.Sort(renders)
	slices.Sort(refs)
	mid := func(v []float64) float64 { return v[len(v)/2] }
	b.ReportMetric(mid(renders), "render-ms")
	b.ReportMetric(mid(refs), "fetch-parse-ms")
	b.ReportMetric(mid(renders)/mid(refs), "render/fetch")
	b.ReportMetric(0, "ns/op")
	b.Logf("render ms min/median/max %.0f/%.0f/%.0f; fetch+parse of the subscription statistic %.0f/%.0f/%.0f; %d runs",
		renders[0], mid(renders), renders[len(renders)-1], refs[0], mid(refs), refs[len(refs)-1], len(renders))
}
