package console_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"tvsm/internal/testkit/browser"
	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/tools/simulate"
)

// world is the data the browser test works on, made through the APIs of a
// real node: two providers, their tariffs and accounts, two closed days of
// history and statistics, a scoped admin of the second provider, and a
// simulated device that acknowledges commands.
type world struct {
	env               *nodetest.Env
	acme, beta        int64
	alice, bob, beta1 int64
	basic, premium    int64
	dayA, dayB        string // the two closed days, oldest first
	scopedLogin       string
	scopedPassword    string
}

const simPassword = "pin-1234"

// shiftedClock is the node's clock: the real time moved back by an offset
// the test sets, so that writes can be made "the day before yesterday" and
// "yesterday" and then today, which closes both days.
type shiftedClock struct{ offset atomic.Int64 }

func (c *shiftedClock) now() time.Time { return time.Now().Add(-time.Duration(c.offset.Load())) }

// at moves the clock so that it reads day (at 12:00 UTC) now.
func (c *shiftedClock) at(day time.Time) {
	c.offset.Store(int64(time.Since(day.Add(12 * time.Hour))))
}

func build(t *testing.T) *world {
	t.Helper()
	clock := &shiftedClock{}
	today := time.Now().UTC().Truncate(24 * time.Hour)
	dayA, dayB := today.AddDate(0, 0, -2), today.AddDate(0, 0, -1)
	clock.at(dayA)
	env := nodetest.StartWith(t, nodetest.Options{Clock: clock.now})
	w := &world{env: env, dayA: dayA.Format(time.DateOnly), dayB: dayB.Format(time.DateOnly),
		scopedLogin: "beta-ops", scopedPassword: "beta-ops-password"}
	pin := md5.Sum([]byte(simPassword))
	pinMD5 := hex.EncodeToString(pin[:])

	// The day before yesterday: the catalog, accounts, subscriptions, a
	// device that watches.
	w.acme = w.create(t, "/api/admin/providers", map[string]any{"name": "Acme Cable", "devices_per_account_limit": 4})
	w.beta = w.create(t, "/api/admin/providers", map[string]any{"name": "Beta Fiber"})
	news := w.create(t, "/api/admin/channels", map[string]any{"name": "News 24", "number": 1})
	sport := w.create(t, "/api/admin/channels", map[string]any{"name": "Sport One", "number": 2})
	kids := w.create(t, "/api/admin/channels", map[string]any{"name": "Kids", "number": 3})
	w.basic = w.create(t, "/api/admin/tariffs", map[string]any{"provider": w.acme, "name": "Basic", "channels": []int64{news, sport}})
	w.premium = w.create(t, "/api/admin/tariffs", map[string]any{"provider": w.acme, "name": "Premium", "channels": []int64{news, sport, kids}})
	betaTV := w.create(t, "/api/admin/tariffs", map[string]any{"provider": w.beta, "name": "Beta TV", "channels": []int64{news}})
	account := func(provider int64, login, name, contract string) int64 {
		return w.create(t, "/api/provider/accounts", map[string]any{"provider": provider, "login": login, "fullname": name,
			"pin_md5": pinMD5, "contract_info": contract, "remote_custom_field": "crm-" + login})
	}
	w.alice = account(w.acme, "sim000000", "Alice Example", "C-1001")
	w.bob = account(w.acme, "sim000001", "Bob Builder", "C-1002")
	carol := account(w.acme, "sim000002", "Carol Jones", "C-1003")
	w.beta1 = account(w.beta, "beta-user", "Bea Beta", "B-1")
	start := dayA.Add(6 * time.Hour).Format("2006-01-02T15:04:05Z")
	for _, s := range [][2]int64{{w.alice, w.basic}, {w.bob, w.premium}, {carol, w.basic}, {w.beta1, betaTV}} {
		w.create(t, "/api/provider/account_subscriptions", map[string]any{"account": s[0], "tarif": s[1], "start": start})
	}
	w.create(t, "/api/provider/devices", map[string]any{"account": w.bob, "mac": "00-1A-79-0A-BB-CC", "comment": "living room"})
	bobTV := w.deviceLogin(t, w.acme, "sim000001", pinMD5, "bob-tv", "tv")
	w.watch(t, bobTV, sport, dayA.Add(11*time.Hour), 1800)

	// Yesterday: a rename (a diff in the history), a disabled account, a
	// second subscription, more viewing.
	clock.at(dayB)
	w.update(t, fmt.Sprintf("/api/provider/accounts/%d", w.alice), map[string]any{"fullname": "Alice Smith"})
	w.update(t, fmt.Sprintf("/api/provider/accounts/%d", carol), map[string]any{"enabled": false})
	w.create(t, "/api/provider/account_subscriptions", map[string]any{"account": w.bob, "tarif": w.basic,
		"start": dayB.Add(8 * time.Hour).Format("2006-01-02T15:04:05Z")})
	w.watch(t, bobTV, news, dayB.Add(10*time.Hour), 3600)
	w.watch(t, w.deviceLogin(t, w.acme, "sim000002", pinMD5, "carol-phone", "phone"), kids, dayB.Add(9*time.Hour), 600)

	// Today: the first write stamped today closes both days.
	clock.offset.Store(0)
	w.update(t, fmt.Sprintf("/api/provider/accounts/%d", w.alice), map[string]any{"account_desc": "VIP"})
	if status, data := w.env.Super(t, http.MethodPost, "/api/admin/admins", map[string]any{"login": w.scopedLogin, "password": w.scopedPassword, "provider": w.beta}); status != http.StatusOK {
		t.Fatalf("create admin: %d %s", status, data)
	}
	w.waitClosed(t)
	return w
}

func (w *world) create(t *testing.T, path string, body map[string]any) int64 {
	t.Helper()
	status, data := w.env.Super(t, http.MethodPost, path, body)
	if status != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, status, data)
	}
	var v struct{ ID int64 }
	if err := json.Unmarshal(data, &v); err != nil || v.ID == 0 {
		t.Fatalf("POST %s: %s (%v)", path, data, err)
	}
	return v.ID
}

func (w *world) update(t *testing.T, path string, body map[string]any) {
	t.Helper()
	if status, data := w.env.Super(t, http.MethodPut, path, body); status != http.StatusOK {
		t.Fatalf("PUT %s: %d %s", path, status, data)
	}
}

// deviceLogin logs a device in through the Device API and returns its token.
func (w *world) deviceLogin(t *testing.T, provider int64, login, pinMD5, uniqueID, class string) string {
	t.Helper()
	status, data := w.env.Do(t, http.MethodPost, "/api/device/login", "", "", map[string]any{
		"provider": provider, "login": login, "password_md5": pinMD5,
		"device": map[string]any{"unique_id": uniqueID, "class": class, "model": "test-" + class, "firmware": "4.2.1", "os": "linux"},
	})
	var v struct{ Token string }
	if status != http.StatusOK || json.Unmarshal(data, &v) != nil || v.Token == "" {
		t.Fatalf("device login %s: %d %s", uniqueID, status, data)
	}
	return v.Token
}

// watch reports one viewing session through the Device API.
func (w *world) watch(t *testing.T, token string, channel int64, start time.Time, seconds int) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"sessions": []map[string]any{{
		"channel_id": channel, "mode": "live", "start": start.Format("2006-01-02T15:04:05Z"), "seconds": seconds}}})
	req, _ := http.NewRequest(http.MethodPost, w.env.URL+"/api/device/viewing", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.env.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("viewing report: %d", resp.StatusCode)
	}
}

// waitClosed waits until the statistics show yesterday as closed.
func (w *world) waitClosed(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodGet, w.env.URL+"/api/stats/device?from="+w.dayA+"&to="+w.dayB, nil)
		req.SetBasicAuth(w.env.SuperLogin, w.env.SuperPassword)
		resp, err := w.env.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Header.Get("X-TVSM-Closed-Through") == w.dayB {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("statistics did not close %s (closed through %q)", w.dayB, resp.Header.Get("X-TVSM-Closed-Through"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runDevice connects alice's simulated set-top box, which acknowledges
// every command, and waits until the Provider API shows it online.
func (w *world) runDevice(t *testing.T) {
	t.Helper()
	sim, err := simulate.New(simulate.Options{URL: w.env.URL, Provider: w.acme, Devices: 1, Password: simPassword, UniquePrefix: "alice-stb-"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _, _ = sim.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, data := w.env.Super(t, http.MethodGet, fmt.Sprintf("/api/provider/devices?account=%d", w.alice), nil)
		if strings.Contains(string(data), `"online":true`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice's simulated device did not come online: %s", data)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tab drives one browser tab with a deadline per step.
type tab struct {
	t        testing.TB
	ctx      context.Context
	url      string
	shots    string
	lastShot string
}

// on returns the tab reporting to t (a subtest).
func (b *tab) on(t testing.TB) *tab { c := *b; c.t = t; return &c }

func (b *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail("%v", err)
	}
}

// fail reports the page's status line and a screenshot with the error.
func (b *tab) fail(format string, args ...any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	status, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector('.status')||{}).textContent||''`))
	hash, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash`))
	browser.Screenshot(b.t, ctx, b.shots, "failure")
	b.t.Fatalf("%s (page %s, status %q)", fmt.Sprintf(format, args...), hash, status)
}

// wait waits until the JavaScript expression is true.
func (b *tab) wait(expr string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(25*time.Second))); err != nil {
		b.fail("waiting for %s: %v", expr, err)
	}
}

func evaluate[T any](b *tab, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.fail("evaluate %s: %v", expr, err)
	}
	return v
}

// open goes to a console route and waits for its heading.
func (b *tab) open(route string) {
	b.t.Helper()
	b.do(chromedp.Navigate(b.url + "/admin/" + route))
	b.wait(`document.querySelector('main h1') !== null`)
}

func (b *tab) shot(name string) {
	b.t.Helper()
	// Fonts loaded and two frames painted: late layout is on the picture.
	evaluate[bool](b, `document.fonts.ready.then(() => new Promise((done) =>
		requestAnimationFrame(() => requestAnimationFrame(() => done(true)))))`)
	browser.Screenshot(b.t, b.ctx, b.shots, name)
}

func (b *tab) signIn(login, password string) {
	b.t.Helper()
	b.do(chromedp.Navigate(b.url+"/admin/"),
		chromedp.WaitVisible(chromedp.CSS(`form.signin input[name=login]`)),
		chromedp.SetValue(chromedp.CSS(`input[name=login]`), login),
		chromedp.SetValue(chromedp.CSS(`input[name=password]`), password),
		chromedp.Click(chromedp.CSS(`form.signin button[type=submit]`)))
	b.wait(`document.querySelector('header .who') !== null && document.querySelector('main h1')?.textContent === 'Accounts'`)
}

// layoutShiftScript sums the page's cumulative layout shift into
// window.__cls, installed before any page script runs.
const layoutShiftScript = `window.__cls = 0;
new PerformanceObserver((list) => { for (const e of list.getEntries()) if (!e.hadRecentInput) window.__cls += e.value })
  .observe({ type: 'layout-shift', buffered: true });`

// diffLayoutScript measures every row of the history's diff tables: the
// field name must stay inside its cell (wrapped where it is long), so that
// neither the cell nor the text of the name overlaps the old and new value
// cells, and the cell must not overflow. It returns the rows measured, how
// many name a field of a list (devices[N].…, subscriptions[N].…: the long
// names), and the problems found.
const diffLayoutScript = `(() => {
  const overlap = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5
  const px = (r) => Math.round(r.left) + '–' + Math.round(r.right)
  const out = { rows: 0, lists: 0, problems: [] }
  for (const tr of document.querySelectorAll('table.diff tbody tr')) {
    const th = tr.querySelector('th')
    const tds = [...tr.querySelectorAll('td')]
    if (!th || tds.length === 0) { out.problems.push('a diff row without a field or a value: ' + tr.textContent); continue }
    out.rows++
    const name = th.textContent
    if (/^\w+\[\d+\]\./.test(name)) out.lists++
    const cell = th.getBoundingClientRect()
    const range = document.createRange()
    range.selectNodeContents(th)
    const text = [...range.getClientRects()]
    for (const td of tds) {
      const box = td.getBoundingClientRect()
      if (overlap(cell, box)) out.problems.push(name + ': its cell (x ' + px(cell) + ') overlaps the value cell (x ' + px(box) + ')')
      for (const t of text) {
        if (overlap(t, box)) out.problems.push(name + ': the name (x ' + px(t) + ') runs into the value ' + JSON.stringify(td.textContent) + ' (x ' + px(box) + ')')
      }
    }
    if (th.scrollWidth > th.clientWidth) out.problems.push(name + ': scrollWidth ' + th.scrollWidth + ' > clientWidth ' + th.clientWidth)
  }
  return out
})()`

// diffLayout is what diffLayoutScript returns.
type diffLayout struct {
	Rows     int      `json:"rows"`
	Lists    int      `json:"lists"`
	Problems []string `json:"problems"`
}

// checkDiffs fails unless every field name of the history's diffs stays
// in its cell; the page must show at least one field of a list (the long
// names), or the check would prove nothing.
func (b *tab) checkDiffs(width string) {
	b.t.Helper()
	d := evaluate[diffLayout](b, diffLayoutScript)
	if d.Lists == 0 {
		b.t.Errorf("%s: no history diff names a field of a list (devices[N].…) among %d rows: nothing long to check", width, d.Rows)
	}
	if len(d.Problems) > 0 {
		b.t.Errorf("%s: the history diffs (%d rows) overlap:\n%s", width, d.Rows, strings.Join(d.Problems, "\n"))
	}
}

// showListDiff scrolls the history to the first diff row naming a field of
// a list, for a screenshot.
func (b *tab) showListDiff() {
	b.t.Helper()
	if !evaluate[bool](b, `(() => {
		const th = [...document.querySelectorAll('table.diff tbody th')].find(th => /^\w+\[\d+\]\./.test(th.textContent))
		th?.closest('li').scrollIntoView({ block: 'start' })
		return th !== undefined })()`) {
		b.fail("no history diff names a field of a list")
	}
}

func TestConsoleInBrowser(t *testing.T) {
	w := build(t)
	w.runDevice(t)
	ctx := browser.Start(t, browser.Options{Width: 1280, Height: 900})
	b := &tab{t: t, ctx: ctx, url: w.env.URL, shots: browser.ScreenshotDir(t)}
	b.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: layoutShiftScript})
		return err
	}))

	// Each step builds on the one before: stop at the first that fails.
	step := func(name string, f func(t *testing.T)) {
		if !t.Failed() {
			t.Run(name, f)
		}
	}
	step("sign in", func(t *testing.T) {
		b := b.on(t)
		b.do(chromedp.Navigate(b.url+"/admin/"), chromedp.WaitVisible(chromedp.CSS(`form.signin`)))
		b.shot("signin")
		b.do(chromedp.SetValue(chromedp.CSS(`input[name=login]`), w.env.SuperLogin),
			chromedp.SetValue(chromedp.CSS(`input[name=password]`), "wrong-password"),
			chromedp.Click(chromedp.CSS(`form.signin button[type=submit]`)))
		b.wait(`document.querySelector('.status.error')?.textContent.includes('wrong login or password')`)
		// By keyboard: type the login, Tab to the password, Enter submits.
		evaluate[bool](b, `document.querySelectorAll('form.signin input').forEach(i => { i.value = '' }) || true`)
		b.do(chromedp.Focus(chromedp.CSS(`input[name=login]`)),
			chromedp.KeyEvent(w.env.SuperLogin+kb.Tab+w.env.SuperPassword+kb.Enter))
		b.wait(`document.querySelector('main h1')?.textContent === 'Accounts'`)
		if got := evaluate[string](b, `document.activeElement.tagName`); got != "H1" {
			t.Errorf("focus after sign-in on %s, want the page heading", got)
		}
	})

	step("find an account", func(t *testing.T) {
		b := b.on(t)
		b.wait(`document.querySelectorAll('.reserve-accounts tbody tr').length === 4`)
		b.do(chromedp.SetValue(chromedp.CSS(`input[name=q]`), "Alice"), chromedp.Click(chromedp.CSS(`form[role=search] button[type=submit]`)))
		b.wait(`location.hash.includes('q=Alice') && document.querySelectorAll('.reserve-accounts tbody tr').length === 1 &&
			document.querySelector('.reserve-accounts tbody').textContent.includes('sim000000')`)
		b.shot("accounts")
		// By contract, by remote_custom_field (exact) and by a device's MAC in
		// another notation.
		for _, c := range []struct{ mode, q, want string }{
			{"quick", "C-1002", "sim000001"}, {"remote_custom_field", "crm-sim000002", "sim000002"}, {"mac", "001a.790a.bbcc", "sim000001"},
		} {
			b.open("#/accounts?mode=" + c.mode + "&q=" + c.q)
			b.wait(fmt.Sprintf(`document.querySelectorAll('.reserve-accounts tbody tr').length === 1 &&
				document.querySelector('.reserve-accounts tbody').textContent.includes(%q)`, c.want))
		}
		if cls := evaluate[float64](b, `window.__cls`); cls > 0.05 {
			t.Errorf("layout shift on the accounts page: %.3f", cls)
		}
	})

	step("read its history", func(t *testing.T) {
		b := b.on(t)
		b.open(fmt.Sprintf("#/accounts?q=%s", "sim000000"))
		b.wait(`document.querySelector('.reserve-accounts tbody a') !== null`)
		b.do(chromedp.Click(chromedp.CSS(`.reserve-accounts tbody a`)))
		b.wait(fmt.Sprintf(`location.hash === '#/accounts/%d' && document.querySelectorAll('ol.timeline li').length >= 4`, w.alice))
		// The rename shows as a diff: the old name struck out, the new one inserted.
		b.wait(`[...document.querySelectorAll('table.diff tr')].some(r => r.querySelector('th')?.textContent === 'fullname' &&
			r.querySelector('del')?.textContent === 'Alice Example' && r.querySelector('ins')?.textContent === 'Alice Smith')`)
		b.wait(`document.querySelector('#acc-devs')?.parentElement.textContent.includes('● online')`)
		b.wait(`document.querySelector('#acc-subs')?.parentElement.textContent.includes('Basic (` + fmt.Sprint(w.basic) + `)')`)
		// Long field names (the simulated device's devices[N].unique_id)
		// wrap in their cell instead of running under the old value.
		b.checkDiffs("1280 px")
		b.shot("account")
	})

	step("send a message and watch the receipt", func(t *testing.T) {
		b := b.on(t)
		b.do(chromedp.Click(chromedp.CSS(`#acc-send + button`)))
		b.wait(`document.querySelector('form.command-form textarea') !== null`)
		b.do(chromedp.SetValue(chromedp.CSS(`form.command-form textarea`), "Hello from the console"),
			chromedp.Click(chromedp.CSS(`form.command-form button[type=submit]`)))
		b.wait(`/^#\/commands\/\d+$/.test(location.hash)`)
		b.wait(`document.querySelector('[data-count=acked]')?.textContent === 'acked 1'`)
		b.wait(`[...document.querySelectorAll('.badge')].some(e => e.textContent === 'acked')`)
		b.shot("receipts")
	})

	step("statistics equal the API", func(t *testing.T) {
		b := b.on(t)
		b.open(fmt.Sprintf("#/stats?from=%s&to=%s&provider=%d", w.dayA, w.dayB, w.acme))
		b.wait(`document.querySelector('.charts')?.dataset.state === 'ready'`)
		b.shot("stats")
		checkCharts(t, b, w)
		if cls := evaluate[float64](b, `window.__cls`); cls > 0.05 {
			t.Errorf("layout shift on the statistics page: %.3f", cls)
		}
	})

	step("providers, tariffs, channels", func(t *testing.T) {
		b := b.on(t)
		b.open("#/providers")
		b.wait(`document.querySelectorAll('main tbody tr').length === 2`)
		b.do(chromedp.Click(chromedp.CSS(`main tbody tr:first-child button`)))
		b.wait(`document.querySelector('section.card form input[type=password]') !== null`)
		b.do(chromedp.SetValue(chromedp.CSS(`section.card input[type=url]`), "https://billing.acme.example/api"),
			chromedp.SetValue(chromedp.CSS(`section.card input[type=password]`), "s3cret-token"),
			chromedp.Click(chromedp.CSS(`section.card button[type=submit]`)))
		b.wait(`document.querySelector('section.card').hidden && document.querySelector('main tbody tr:first-child').textContent.includes('https://billing.acme.example/api')`)
		b.wait(`[...document.querySelector('main tbody tr:first-child').children].some(td => td.textContent === 'set')`)
		b.shot("providers")
		_, data := w.env.Super(t, http.MethodGet, fmt.Sprintf("/api/admin/providers/%d", w.acme), nil)
		if !strings.Contains(string(data), `"token_set":true`) || strings.Contains(string(data), "s3cret") {
			t.Errorf("the token is not write-only: %s", data)
		}
		if strings.Contains(evaluate[string](b, `document.body.innerHTML`), "s3cret") {
			t.Error("the page shows the token")
		}
		b.open("#/tariffs")
		b.wait(`document.querySelector('main tbody')?.textContent.includes('Premium')`)
		b.shot("tariffs")
		b.open("#/channels")
		b.wait(`document.querySelector('main tbody')?.textContent.includes('Sport One')`)
		b.shot("channels")
		b.open("#/commands")
		b.wait(`document.querySelector('form.command-form select') !== null`)
		b.shot("commands")
	})

	step("the command form shows the fields of its command", func(t *testing.T) {
		b := b.on(t)
		b.wait(`document.querySelector('form.command-form select') !== null`)
		common := []string{"To", "Ids", "Command", "Expires after (minutes)"}
		want := map[string][]string{
			"user_message":         append(slices.Clone(common), "Message type", "Text"),
			"switch_to_channel":    append(slices.Clone(common), "Channel id"),
			"refresh_channel_list": common, "reinit": common, "restart": common, "update": common,
		}
		const commandSelect = `[...document.querySelectorAll('form.command-form .field')].find(f => f.querySelector('label').textContent === 'Command').querySelector('select')`
		kinds := evaluate[[]string](b, `[...`+commandSelect+`.options].map(o => o.value)`)
		if len(kinds) != len(want) {
			t.Errorf("the form offers the commands %q, want the %d of %v", kinds, len(want), slices.Sorted(maps.Keys(want)))
		}
		for _, kind := range kinds {
			// Choose the command as a user does (a change event), then list
			// the fields the form shows (those laid out: not display: none).
			visible := evaluate[[]string](b, fmt.Sprintf(`(() => {
				const kind = %s
				kind.value = %q
				kind.dispatchEvent(new Event('change', { bubbles: true }))
				return [...document.querySelectorAll('form.command-form .field')]
					.filter(f => f.offsetParent !== null && getComputedStyle(f).display !== 'none' && f.getClientRects().length > 0)
					.map(f => f.querySelector('label').textContent) })()`, commandSelect, kind))
			if w, ok := want[kind]; !ok {
				t.Errorf("the form offers the command %q, which the test does not know", kind)
			} else if !slices.Equal(visible, w) {
				t.Errorf("command %s: the form shows the fields %q, want %q", kind, visible, w)
			}
			if kind == "user_message" || kind == "switch_to_channel" {
				b.shot("command-" + strings.ReplaceAll(kind, "_", "-"))
			}
		}
	})

	step("phone width", func(t *testing.T) {
		b := b.on(t)
		b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
		b.open(fmt.Sprintf("#/accounts/%d", w.alice))
		b.wait(`document.querySelectorAll('ol.timeline li').length >= 4`)
		if over := evaluate[bool](b, `document.documentElement.scrollWidth > window.innerWidth + 1`); over {
			t.Errorf("the account page is wider than a phone: %d px", evaluate[int](b, `document.documentElement.scrollWidth`))
		}
		b.shot("phone-account")
		b.checkDiffs("390 px")
		b.showListDiff()
		b.shot("phone-history")
		b.do(chromedp.EmulateViewport(1280, 900))
	})

	step("a provider-scoped admin sees only its provider", func(t *testing.T) {
		b := b.on(t)
		b.do(chromedp.Click(chromedp.CSS(`header .who button`)))
		b.wait(`document.querySelector('form.signin') !== null`)
		b.signIn(w.scopedLogin, w.scopedPassword)
		b.wait(`document.querySelectorAll('.reserve-accounts tbody tr').length === 1 &&
			document.querySelector('.reserve-accounts tbody').textContent.includes('beta-user')`)
		b.open("#/providers")
		b.wait(`document.querySelectorAll('main tbody tr').length === 1 && document.querySelector('main tbody').textContent.includes('Beta Fiber')`)
		if evaluate[bool](b, `document.body.textContent.includes('Acme Cable')`) {
			t.Error("a Beta admin sees Acme on the providers page")
		}
		// Another provider's account: the API's cause is shown.
		b.open(fmt.Sprintf("#/accounts/%d", w.alice))
		b.wait(`document.querySelector('.status.error')?.textContent.includes('403')`)
		if evaluate[bool](b, `document.body.textContent.includes('sim000000')`) {
			t.Error("a Beta admin sees Acme's account")
		}
		b.shot("scoped-forbidden")
		b.open(fmt.Sprintf("#/stats?from=%s&to=%s", w.dayA, w.dayB))
		b.wait(`document.querySelector('.charts')?.dataset.state === 'ready'`)
		labels := evaluate[[]string](b, `document.getElementById('chart-subscriptions').chartData.series.map(s => s.label)`)
		if len(labels) != 1 || !strings.HasPrefix(labels[0], "Beta TV") {
			t.Errorf("a Beta admin's chart shows %q, want only Beta TV", labels)
		}
	})
}

// statsRange is what the statistics page shows: the days of its chart, the
// range in its form, and the range buttons marked as the one chosen.
type statsRange struct {
	Days    []string `json:"days"`
	From    string   `json:"from"`
	To      string   `json:"to"`
	Pressed []string `json:"pressed"`
}

// TestConsoleOnDemo browses a demo history of 90 days, as the README's
// shows: paging through the accounts, an account with months of history at
// desktop and phone widths, the statistics of the last 90 days (the page's
// default range), and the accounts at phone width. Its screenshots
// illustrate the README (make screenshots).
func TestConsoleOnDemo(t *testing.T) {
	dir := t.TempDir()
	closed := runDemo(t, dir, "--days", "90", "--accounts", "400", "--seed", "5")
	env := nodetest.StartWith(t, nodetest.Options{Dir: dir})
	ctx := browser.Start(t, browser.Options{Width: 1280, Height: 900})
	b := &tab{t: t, ctx: ctx, url: env.URL, shots: browser.ScreenshotDir(t)}
	b.signIn(env.SuperLogin, env.SuperPassword)

	b.wait(`document.querySelector('.summary')?.textContent.includes('page 1 of')`)
	pages := evaluate[int](b, `Number(document.querySelector('.summary').textContent.match(/of ([\d,]+)/)[1].replace(/,/g, ''))`)
	first := evaluate[string](b, `document.querySelector('.reserve-accounts tbody tr').textContent`)
	b.do(chromedp.Click(chromedp.CSS(`button[aria-label="Next page"]`)))
	b.wait(fmt.Sprintf(`document.querySelector('.summary')?.textContent.includes('page 2 of %d') &&
		document.querySelector('.reserve-accounts tbody tr').textContent !== %q`, pages, first))
	b.do(chromedp.Click(chromedp.CSS(`button[aria-label="Last page"]`)))
	b.wait(fmt.Sprintf(`document.querySelector('.summary')?.textContent.includes('page %d of %d')`, pages, pages))
	b.open("#/accounts")
	b.wait(`document.querySelectorAll('.reserve-accounts tbody tr').length === 25`)
	b.shot("demo-accounts")

	// The oldest account has the longest history.
	b.open("#/accounts?sort=id")
	b.wait(`document.querySelector('.reserve-accounts tbody a') !== null`)
	b.do(chromedp.Click(chromedp.CSS(`.reserve-accounts tbody a`)))
	b.wait(`document.querySelectorAll('ol.timeline li').length >= 3 && document.querySelector('#acc-devs')?.parentElement.querySelector('table') !== null`)
	account := evaluate[string](b, `location.hash`)
	// Its subscriptions[N].… and devices[N].… changes wrap in their cells.
	b.checkDiffs("1280 px")
	b.shot("demo-account")

	b.do(chromedp.EmulateViewport(1280, 1750))
	b.open("#/stats")
	b.wait(`document.querySelector('.charts')?.dataset.state === 'ready'`)
	// The page opens on the last 90 closed days, as the README promises.
	closedDay, err := time.Parse(time.DateOnly, closed)
	if err != nil {
		t.Fatal(err)
	}
	firstDay := closedDay.AddDate(0, 0, -89).Format(time.DateOnly)
	shown := evaluate[statsRange](b, `({ days: document.getElementById('chart-subscriptions').chartData.days,
		from: document.querySelector('form.filters input[type=date]').value,
		to: document.querySelectorAll('form.filters input[type=date]')[1].value,
		pressed: [...document.querySelectorAll('.presets button[aria-pressed=true]')].map(e => e.textContent) })`)
	if n := len(shown.Days); n != 90 || shown.Days[0] != firstDay || shown.Days[n-1] != closed {
		t.Errorf("the default range shows %d closed days (%v … %v), want the 90 from %s to %s", n, shown.Days[:min(n, 1)], shown.Days[max(n-1, 0):], firstDay, closed)
	}
	if shown.From != firstDay || shown.To != closed || !slices.Equal(shown.Pressed, []string{"90 days"}) {
		t.Errorf("the range chosen is %s to %s, preset %q; want %s to %s, preset \"90 days\"", shown.From, shown.To, shown.Pressed, firstDay, closed)
	}
	b.shot("demo-stats")

	b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	b.open("#/accounts")
	b.wait(`document.querySelectorAll('.reserve-accounts tbody tr').length === 25`)
	if evaluate[bool](b, `document.documentElement.scrollWidth > window.innerWidth + 1`) {
		t.Errorf("the accounts page is wider than a phone: %d px", evaluate[int](b, `document.documentElement.scrollWidth`))
	}
	b.shot("demo-phone")

	// The account's history on a phone: long field names wrap, and the page
	// stays as wide as the phone.
	b.open(account)
	b.wait(`document.querySelectorAll('ol.timeline li').length >= 3`)
	b.checkDiffs("390 px")
	if evaluate[bool](b, `document.documentElement.scrollWidth > window.innerWidth + 1`) {
		t.Errorf("the account page is wider than a phone: %d px", evaluate[int](b, `document.documentElement.scrollWidth`))
	}
	b.showListDiff()
	b.shot("phone-demo-history")
}

// TestConsoleErasesAnAccount: on the account page, the erasure asks for
// the login first (the button stays disabled until it is typed), refuses a
// subscribed account without "even if a subscription has not ended" (the
// API's cause shown), then erases it; the API answers 404 afterwards and
// the export button works on another account.
func TestConsoleErasesAnAccount(t *testing.T) {
	env := nodetest.Start(t)
	status, body := env.Super(t, "POST", "/api/admin/providers", map[string]any{"name": "Acme"})
	if status != 200 {
		t.Fatalf("provider: %d %s", status, body)
	}
	var id struct{ ID int64 }
	create := func(path string, v map[string]any) int64 {
		t.Helper()
		status, body := env.Super(t, "POST", path, v)
		if status != 200 || json.Unmarshal(body, &id) != nil {
			t.Fatalf("%s: %d %s", path, status, body)
		}
		return id.ID
	}
	tariff := create("/api/admin/tariffs", map[string]any{"provider": 1, "name": "Basic"})
	account := create("/api/provider/accounts", map[string]any{"provider": 1, "login": "erase-me", "pin_md5": "", "fullname": "Erin Erase"})
	create("/api/provider/account_subscriptions", map[string]any{"account": account, "tarif": tariff, "start": "2020-01-01T00:00:00Z"})

	ctx := browser.Start(t, browser.Options{Width: 1280, Height: 900})
	b := &tab{t: t, ctx: ctx, url: env.URL, shots: browser.ScreenshotDir(t)}
	b.signIn(env.SuperLogin, env.SuperPassword)
	b.open(fmt.Sprintf("#/accounts/%d", account))
	b.wait(`document.querySelector('main h1')?.textContent.includes('Erin Erase')`)
	if evaluate[bool](b, `(async () => {
		const created = [];
		const orig = URL.createObjectURL;
		URL.createObjectURL = (blob) => { created.push(blob); return orig(blob) };
		[...document.querySelectorAll('button')].find(x => x.textContent === 'Export data').click();
		for (let i = 0; i < 100 && created.length === 0; i++) await new Promise(r => setTimeout(r, 50));
		return created.length === 1 && (await created[0].text()).includes('"AccountCreated.v2"');
	})()`) != true {
		t.Error("Export data did not offer the account's export")
	}
	clickButton(b, "Erase personal data…")
	b.wait(`document.querySelector('input[name=confirm-login]') !== null`)
	b.do(chromedp.SendKeys(chromedp.CSS(`input[name=confirm-login]`), "erase-m"))
	if !evaluate[bool](b, `[...document.querySelectorAll('button')].find(x => x.textContent === 'Erase for good').disabled`) {
		t.Fatal("the erase button is enabled before the login is typed in full")
	}
	b.do(chromedp.SendKeys(chromedp.CSS(`input[name=confirm-login]`), "e"))
	b.wait(`![...document.querySelectorAll('button')].find(x => x.textContent === 'Erase for good').disabled`)
	clickButton(b, "Erase for good")
	b.wait(`document.querySelector('.status.error')?.textContent.includes('subscription')`)
	if status, _ := env.Super(t, "GET", fmt.Sprintf("/api/provider/accounts/%d", account), nil); status != 200 {
		t.Fatalf("the account answers %d after a refused erasure", status)
	}
	b.do(chromedp.Click(chromedp.CSS(`input[name=force]`)))
	clickButton(b, "Erase for good")
	b.wait(`document.querySelector('.erased h2')?.textContent === 'Account ` + fmt.Sprint(account) + ` is erased'`)
	b.shot("account-erased")
	if status, _ := env.Super(t, "GET", fmt.Sprintf("/api/provider/accounts/%d", account), nil); status != 404 {
		t.Errorf("the erased account answers %d, want 404", status)
	}
}

// clickButton clicks the page's button whose text is text.
func clickButton(b *tab, text string) {
	b.t.Helper()
	if !evaluate[bool](b, `(() => { const x = [...document.querySelectorAll('button')].find(x => x.textContent === `+strconv.Quote(text)+`);
		if (!x) return false; x.click(); return true })()`) {
		b.fail("no button %q", text)
	}
}
