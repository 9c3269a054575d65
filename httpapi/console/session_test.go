package console_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"tvsm/internal/testkit/browser"
	"tvsm/internal/testkit/nodetest"
)

// apiCall is a request the page made to an API, with its Authorization
// header, and the status it was answered.
type apiCall struct {
	method, path, auth string
	status             int64
}

// String shows a call with the scheme of its Authorization only: test
// output keeps no credentials.
func (c apiCall) String() string {
	scheme, _, _ := strings.Cut(c.auth, " ")
	return fmt.Sprintf("%s %s (%s) %d", c.method, c.path, scheme, c.status)
}

// apiCalls records the page's API requests from the browser's own network
// events: what the page really sent, whatever its code says.
type apiCalls struct {
	mu    sync.Mutex
	calls []apiCall
	byID  map[network.RequestID]int
}

func recordAPICalls(t *testing.T, ctx context.Context, base string) *apiCalls {
	t.Helper()
	r := &apiCalls{byID: map[network.RequestID]int{}}
	err := chromedp.Listen(ctx, func(ev any) {
		r.mu.Lock()
		defer r.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			path, ok := strings.CutPrefix(e.Request.URL, base)
			if !ok || !strings.HasPrefix(path, "/api/") {
				return
			}
			auth, _ := e.Request.Headers["Authorization"].(string)
			r.byID[e.RequestID] = len(r.calls)
			r.calls = append(r.calls, apiCall{method: e.Request.Method, path: path, auth: auth})
		case *network.EventResponseReceived:
			if i, ok := r.byID[e.RequestID]; ok {
				r.calls[i].status = e.Response.Status
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// since returns the calls made after the first n.
func (r *apiCalls) since(n int) []apiCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]apiCall(nil), r.calls[min(n, len(r.calls)):]...)
}

func (r *apiCalls) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// answered reports whether a call of method to path was made after the
// first n and answered status.
func (r *apiCalls) answered(n int, method, path string, status int64) bool {
	for _, c := range r.since(n) {
		if c.method == method && c.path == path && c.status == status {
			return true
		}
	}
	return false
}

// bearerOf checks the calls made after the first n: exactly one, the
// sign-in, carries the password (Basic), and every other carries the same
// bearer token, which it returns.
func (r *apiCalls) bearerOf(t *testing.T, n int) string {
	t.Helper()
	var token string
	signIns := 0
	for _, c := range r.since(n) {
		switch {
		case c.method == http.MethodPost && c.path == "/api/admin/session":
			signIns++
			if !strings.HasPrefix(c.auth, "Basic ") {
				t.Errorf("the sign-in was %v, want Basic credentials", c)
			}
		case strings.HasPrefix(c.auth, "Bearer "):
			if token == "" {
				token = strings.TrimPrefix(c.auth, "Bearer ")
			}
		default:
			t.Errorf("%v: want the session's bearer token", c)
		}
	}
	if signIns != 1 || token == "" {
		t.Fatalf("%d sign-ins and bearer token %v among the calls %v; want one sign-in, then bearer tokens", signIns, token != "", r.since(n))
	}
	return token
}

// storageScript returns what the page keeps where a script of its origin,
// or anyone with the browser's profile, could read it later.
const storageScript = `JSON.stringify({ session: Object.entries(sessionStorage), local: Object.entries(localStorage), cookie: document.cookie })`

// TestConsoleSignsInWithASessionToken: the console sends the admin's
// password once, to POST /api/admin/session, and works with the session
// token it gets, kept in memory only: nothing in sessionStorage,
// localStorage or cookies. A reload, or coming back to the page, asks to
// sign in again (and signs the old session out); Sign out revokes the
// token, which the API then refuses.
func TestConsoleSignsInWithASessionToken(t *testing.T) {
	env := nodetest.Start(t)
	if status, body := env.Super(t, http.MethodPost, "/api/admin/providers", map[string]any{"name": "Acme Cable"}); status != http.StatusOK {
		t.Fatalf("provider: %d %s", status, body)
	}
	ctx := browser.Start(t, browser.Options{Width: 1280, Height: 900})
	b := &tab{t: t, ctx: ctx, url: env.URL, shots: browser.ScreenshotDir(t)}
	calls := recordAPICalls(t, ctx, env.URL)

	// Given a signed-in admin who uses the console,
	b.signIn(env.SuperLogin, env.SuperPassword)
	b.open("#/providers")
	b.wait(`document.querySelector('main tbody')?.textContent.includes('Acme Cable')`)

	// then the password went out once, every other call carried the token,
	stored := evaluate[string](b, storageScript)
	if strings.Contains(stored, env.SuperPassword) {
		t.Errorf("the page keeps the password where scripts and the profile can read it: %s", stored)
	}
	if stored != `{"session":[],"local":[],"cookie":""}` {
		t.Errorf("the page keeps %s; want nothing in sessionStorage, localStorage or cookies", stored)
	}
	first := calls.bearerOf(t, 0)
	if strings.Contains(stored, first) {
		t.Error("the page keeps its session token in storage")
	}
	if status := bearerStatus(t, env, first); status != http.StatusOK {
		t.Fatalf("the console's token answers %d before sign-out", status)
	}

	// When the page is reloaded, it asks to sign in again, and the session
	// it held is signed out as the page goes.
	b.do(chromedp.Reload())
	b.wait(`document.querySelector('form.signin') !== null`)
	waitStatus(t, env, first, http.StatusUnauthorized)

	// When the admin leaves the page for another and comes back, it asks
	// to sign in again, from the browser's back-forward cache or not, and
	// the session it held is signed out.
	before := calls.count()
	b.signIn(env.SuperLogin, env.SuperPassword)
	left := calls.bearerOf(t, before)
	b.do(chromedp.Navigate(b.url + "/api/admin/openapi.json"))
	// Back, without waiting for a load: a page the back-forward cache
	// restores is shown without one.
	b.do(chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		h, err := chromedp.Call(ctx, page.GetNavigationHistory, cdp.Empty{})
		if err != nil || h.CurrentIndex < 1 {
			return fmt.Errorf("navigation history %+v: %v", h, err)
		}
		_, err = chromedp.Call(ctx, page.NavigateToHistoryEntry, page.NavigateToHistoryEntryParams{EntryID: h.Entries[h.CurrentIndex-1].ID})
		return err
	}))
	waitRestored(b, `document.querySelector('form.signin') !== null`)
	waitStatus(t, env, left, http.StatusUnauthorized)

	// When the admin signs in again and then signs out,
	before = calls.count()
	b.signIn(env.SuperLogin, env.SuperPassword)
	b.open("#/providers")
	b.wait(`document.querySelector('main tbody')?.textContent.includes('Acme Cable')`)
	second := calls.bearerOf(t, before)
	if second == first {
		t.Fatal("the second sign-in got the first session's token")
	}
	before = calls.count()
	b.do(chromedp.Click(chromedp.CSS(`header .who button`)))
	b.wait(`document.querySelector('form.signin') !== null`)
	deadline := time.Now().Add(10 * time.Second)
	for !calls.answered(before, http.MethodDelete, "/api/admin/session", http.StatusNoContent) {
		if time.Now().After(deadline) {
			t.Fatalf("no DELETE /api/admin/session answered 204 after Sign out; calls %v", calls.since(before))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// then the token is refused, and the page keeps nothing.
	if status := bearerStatus(t, env, second); status != http.StatusUnauthorized {
		t.Errorf("the token answers %d after Sign out, want 401", status)
	}
	if stored := evaluate[string](b, storageScript); stored != `{"session":[],"local":[],"cookie":""}` {
		t.Errorf("after Sign out the page keeps %s", stored)
	}
}

// bearerStatus is the status of an Admin API read with token.
func bearerStatus(t *testing.T, env *nodetest.Env, token string) int {
	t.Helper()
	status, _ := env.DoHeader(t, http.MethodGet, "/api/admin/providers", "", "", nil, http.Header{"Authorization": {"Bearer " + token}})
	return status
}

// waitStatus waits (at most 10 s) until token answers status: a request
// the page sent as it went may still be on its way.
func waitStatus(t *testing.T, env *nodetest.Env, token string, status int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := bearerStatus(t, env, token)
		if got == status {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the token answers %d, want %d", got, status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitRestored waits (at most 20 s) until expr is true on a page coming
// back from the browser's history, asking again while the page's script
// context is being replaced (evaluations fail meanwhile).
func waitRestored(b *tab, expr string) {
	b.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.fail("waiting for %s: %v", expr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
