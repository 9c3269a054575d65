package console_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"tvsm/eventstore/embedded"
	"tvsm/internal/testkit/browser"
	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/testkit/testutil"
	"tvsm/internal/tools/demo"
)

// runDemo writes a demo history into dir (laid out as nodetest expects)
// with `tvsm demo` and the given flags, and returns its last closed day:
// the tvsm binary, without the race detector, writes 90 days of 400
// accounts in a few seconds, where the generator under -race took about
// 15 (TestDemoStatistics runs it under -race).
func runDemo(t testing.TB, dir string, flags ...string) (closed string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "demo")
	cmd := exec.Command(testutil.Binary(t), append([]string{"demo", "--data", out, "--quiet"}, flags...)...)
	cmd.Env = append(os.Environ(), "TVSM_ADMIN_LOGIN="+nodetest.SuperLogin, "TVSM_ADMIN_PASSWORD="+nodetest.SuperPassword)
	text, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tvsm demo: %v\n%s", err, text)
	}
	m := regexp.MustCompile(`wrote \S+ to (\S+) in`).FindSubmatch(text)
	if m == nil {
		t.Fatalf("tvsm demo did not say what it wrote:\n%s", text)
	}
	nodetest.Adopt(t, out, dir)
	return string(m[1])
}

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
// 100 tariffs, 200 accounts) in headless Chromium, with the page's own
// measures (performance.now() from opening the range): the two charts of
// 100 tariffs × 1,096 days drawn ("lines"), and every chart drawn, the
// viewing sums of three years included ("page"). Beside them, measured in
// the same tab just before each render, the reference: fetching and
// parsing the subscription statistic alone, which the page must do anyway.
//
//	go test -run '^$' -bench StatisticsChart -benchtime 9x ./httpapi/console/
//
// Reported: min/median/max in ms, and the median ratio lines/reference.
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
	var lines, pages, refs, fetches, parses []float64
	i := 0
	for b.Loop() {
		i++
		refs = append(refs, evaluate[float64](tb, reference))
		evaluate[bool](tb, fmt.Sprintf(`(location.hash = '#/stats?from=%s&to=%s&provider=1&run=%d', true)`, from, to, i))
		tb.wait(fmt.Sprintf(`location.hash.endsWith('run=%d') && document.querySelector('.charts')?.dataset.state === 'ready'`, i))
		ms := evaluate[map[string]float64](tb, `Object.fromEntries(['lines', 'render', 'fetch', 'parse'].map(k => [k, Number(document.querySelector('.charts').dataset[k + 'Ms'])]))`)
		lines, pages = append(lines, ms["lines"]), append(pages, ms["render"])
		fetches, parses = append(fetches, ms["fetch"]), append(parses, ms["parse"]-ms["fetch"])
		if n := evaluate[int](tb, `document.getElementById('chart-subscriptions').chartData.series.length`); n != 100 {
			b.Fatalf("the chart shows %d tariffs, want 100", n)
		}
	}
	browser.Screenshot(b, ctx, browser.ScreenshotDir(b), "stats-3-years")
	for _, v := range [][]float64{lines, pages, refs, fetches, parses} {
		slices.Sort(v)
	}
	mid := func(v []float64) float64 { return v[len(v)/2] }
	b.ReportMetric(mid(lines), "lines-ms")
	b.ReportMetric(mid(pages), "page-ms")
	b.ReportMetric(mid(refs), "reference-ms")
	b.ReportMetric(mid(lines)/mid(refs), "lines/reference")
	b.ReportMetric(0, "ns/op")
	spread := func(v []float64) string { return fmt.Sprintf("%.0f/%.0f/%.0f", v[0], mid(v), v[len(v)-1]) }
	b.Logf("ms min/median/max over %d runs: lines %s (subscription answer received %s, parsed in %s); page %s; reference (fetch+parse alone) %s",
		len(lines), spread(lines), spread(fetches), spread(parses), spread(pages), spread(refs))
}
