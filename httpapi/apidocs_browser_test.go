package httpapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"tvsm/httpapi"
	"tvsm/httpapi/apidoc"
	"tvsm/internal/testkit/browser"
)

// violationScript records the page's Content-Security-Policy violations in
// window.__csp, installed before any page script runs.
const violationScript = `window.__csp = [];
document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.effectiveDirective + ' ' + e.blockedURI));`

// TestSwaggerUIInBrowser: each API's Swagger UI, in headless Chromium under
// the Content-Security-Policy it is served with, loads its document and
// lists every operation, opens one, and breaks no rule of the policy
// (nothing in the console); while an inline script, which the policy
// forbids, does not run. The pages may not be framed.
func TestSwaggerUIInBrowser(t *testing.T) {
	engine := httpapi.New(httpapi.Options{Logger: slog.New(slog.DiscardHandler)})
	uis := []string{apidoc.Provider, apidoc.Admin, apidoc.Stats}
	for _, name := range uis {
		if err := httpapi.MountDocs(engine.Group("/api/"+name), name, true); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(httpapi.Handler(engine))
	t.Cleanup(srv.Close)

	for _, name := range uis {
		resp, err := srv.Client().Get(srv.URL + "/api/" + name + "/swagger-ui/index.html")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") ||
			!strings.Contains(csp, "frame-ancestors 'none'") || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s Swagger UI: Content-Security-Policy %q, X-Frame-Options %q; want the console's policy, no framing",
				name, csp, resp.Header.Get("X-Frame-Options"))
		}
	}

	ctx := browser.Start(t, browser.Options{})
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: violationScript})
		return err
	})); err != nil {
		t.Fatal(err)
	}
	console := collectConsole(t, ctx)

	for _, name := range uis {
		t.Run(name, func(t *testing.T) {
			want := operations(t, name)
			step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
				t.Helper()
				c, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				if err := chromedp.Do(c, actions...); err != nil {
					t.Fatalf("%s: %v (console: %v)", what, err, console())
				}
			}
			poll := func(what, expr string) {
				t.Helper()
				c, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				if _, err := chromedp.Run(c, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(25*time.Second))); err != nil {
					t.Fatalf("waiting for %s: %v (console: %v)", what, err, console())
				}
			}
			step("open the page", chromedp.Navigate(srv.URL+"/api/"+name+"/swagger-ui/index.html"))
			poll("every operation listed", `document.querySelectorAll('.opblock').length >= `+itoa(want))
			got := evaluate[int](t, ctx, `document.querySelectorAll('.opblock').length`)
			if got != want {
				t.Errorf("%d operations listed, want %d", got, want)
			}
			step("open the first operation", chromedp.Click(chromedp.CSS(`.opblock .opblock-summary`)))
			poll("its details shown", `document.querySelector('.opblock.is-open .opblock-body') !== null`)
			if v := evaluate[[]string](t, ctx, `window.__csp`); len(v) > 0 {
				t.Errorf("policy violations: %v", v)
			}

			// The policy is in force: an inline script is refused.
			evaluate[bool](t, ctx, `(() => { const s = document.createElement('script');
				s.textContent = 'window.__inline = true'; document.head.append(s); return true })()`)
			if evaluate[bool](t, ctx, `window.__inline === true`) {
				t.Error("an inline script ran: the page has no Content-Security-Policy in force")
			}
			poll("the inline script reported", `window.__csp.some((v) => v.startsWith('script-src'))`)
		})
	}

	// Nothing in the console but the policy's report of the inline scripts
	// the test injected.
	for _, m := range console() {
		if !strings.Contains(m, "Content Security Policy") || !strings.Contains(m, "inline script") {
			t.Errorf("console: %s", m)
		}
	}
}

// operations returns how many operations Swagger UI lists for API name:
// one per tag of each operation of its document.
func operations(t *testing.T, name string) int {
	t.Helper()
	doc, err := apidoc.Document(name)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc.JSON, &d); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ops := range d.Paths {
		for method, raw := range ops {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options":
			default:
				continue
			}
			var op struct{ Tags []string }
			_ = json.Unmarshal(raw, &op)
			n += max(1, len(op.Tags))
		}
	}
	return n
}

// collectConsole records what the tab of ctx writes to its console (calls,
// uncaught exceptions, the browser's log) from now on; the func returns
// what was recorded so far.
func collectConsole(t *testing.T, ctx context.Context) func() []string {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	var got []string
	done := make(chan struct{})
	messages := chromedp.Console(ctx)
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			mu.Lock()
			got = append(got, m.String())
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

func evaluate[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func itoa(n int) string { return admItoa(int64(n)) }
