// Package browser starts headless Chromium for tests and benchmarks, driven
// over the DevTools protocol with chromedp. It uses the Chromium the system
// has (Debian's chromium package); it never downloads a browser.
//
// Chromium runs with a fresh profile in a temporary directory and with
// every background service that would call out to the network turned off:
// the tests run where no host but loopback answers.
package browser

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// RequireEnv names the variable that makes a missing Chromium a failure
// instead of a skip (CI sets it).
const RequireEnv = "TVSM_REQUIRE_CHROMIUM"

// ScreenshotDirEnv names the variable holding the directory screenshots
// are saved in; without it they go to the test's temporary directory.
const ScreenshotDirEnv = "TVSM_SCREENSHOT_DIR"

// candidates are where Chromium is looked for, in order.
var candidates = []string{"chromium", "chromium-browser", "/usr/bin/chromium", "google-chrome"}

// Path returns the Chromium executable, or "" when there is none.
func Path() string {
	for _, c := range candidates {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	return ""
}

// Options adjust the browser.
type Options struct {
	// Width and Height of the window (default 1280 × 900).
	Width, Height int
}

// Start starts Chromium for t and returns a browser context (its first
// tab); the test's cleanup stops Chromium. Without Chromium the test is
// skipped, or fails when RequireEnv is set.
func Start(t testing.TB, o Options) context.Context {
	t.Helper()
	exe := Path()
	if exe == "" {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("browser: Chromium not found (%s is set): install Debian's chromium package", RequireEnv)
		}
		t.Skipf("browser: Chromium not found; install Debian's chromium package (set %s to fail instead)", RequireEnv)
	}
	if o.Width == 0 {
		o.Width, o.Height = 1280, 900
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), // tests run as root in containers
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-features", "Translate,OptimizationHints,MediaRouter,AutofillServerCommunication"),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("safebrowsing-disable-auto-update", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.WindowSize(o.Width, o.Height),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx, chromedp.WithErrorf(t.Logf))
	// Start the browser now, so that a failure to launch is reported here.
	// (The first run's context is the browser's life: it takes no timeout.)
	if err := chromedp.Do(ctx); err != nil {
		cancelCtx()
		cancelAlloc()
		t.Fatalf("browser: start %s: %v", exe, err)
	}
	t.Cleanup(func() {
		cancelCtx() // closes the tab and the browser
		cancelAlloc()
	})
	return ctx
}

// ScreenshotDir returns the directory screenshots of t go to: the one
// ScreenshotDirEnv names (created if needed), else a temporary one.
func ScreenshotDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(ScreenshotDirEnv)
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("browser: %v", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	return abs
}

// Screenshot saves the page's visible part as dir/name.png.
func Screenshot(t testing.TB, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("browser: screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatalf("browser: %v", err)
	}
	t.Logf("screenshot %s", path)
}
