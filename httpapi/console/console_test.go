package console_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"tvsm/httpapi"
)

// get asks the engine every node runs (where the console is mounted) for
// path.
func get(t *testing.T, srv *httptest.Server, path string) (*http.Response, string) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// TestConsoleFiles checks what the binary serves without a browser: the
// page at /admin and /admin/, with its security headers, and every file the
// page names, cached for good because its name changes with its content.
func TestConsoleFiles(t *testing.T) {
	engine := httpapi.New(httpapi.Options{})
	httpapi.Mount(engine, httpapi.API{})
	srv := httptest.NewServer(httpapi.Handler(engine))
	defer srv.Close()

	var page string
	for _, path := range []string{"/admin", "/admin/"} {
		resp, body := get(t, srv, path)
		h := resp.Header
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/html") ||
			!strings.Contains(h.Get("Content-Security-Policy"), "default-src 'self'") || h.Get("X-Frame-Options") != "DENY" ||
			h.Get("Cache-Control") != "no-cache" || !strings.Contains(body, `<div id="app">`) {
			t.Fatalf("GET %s: %d %v\n%.300s", path, resp.StatusCode, h, body)
		}
		page = body
	}
	assets := regexp.MustCompile(`(?:src|href)="(/admin/assets/[^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(assets) != 2 {
		t.Fatalf("the page names %d files, want its script and its style:\n%s", len(assets), page)
	}
	for _, m := range assets {
		resp, body := get(t, srv, m[1])
		want := map[bool]string{true: "text/javascript", false: "text/css"}[strings.HasSuffix(m[1], ".js")]
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), want) ||
			!strings.Contains(resp.Header.Get("Cache-Control"), "immutable") || len(body) < 1000 {
			t.Errorf("GET %s: %d %v, %d bytes", m[1], resp.StatusCode, resp.Header, len(body))
		}
	}
	for _, path := range []string{"/admin/assets/missing.js", "/admin/../go.mod", "/admin/%2e%2e/go.mod", "/admin/dist/index.html"} {
		if resp, _ := get(t, srv, path); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
}
