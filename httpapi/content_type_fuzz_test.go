package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
)

// FuzzRequireBodyType: whatever the Content-Type, method and body of a
// request, requireBodyType answers 415 with the JSON error body naming the
// header and what to send, or lets the request through; it lets it through
// only for the route's type (any case, any parameters) or, on a bodiless
// PUT or DELETE, no Content-Type at all; never 5xx.
func FuzzRequireBodyType(f *testing.F) {
	for _, seed := range []struct {
		ct, method string
		body       bool
		bulk       bool
	}{
		{"application/json", "POST", true, false}, {"", "POST", false, false}, {"", "DELETE", false, false},
		{"Application/JSON; charset=UTF-8", "PUT", true, false}, {"text/plain;charset=UTF-8", "POST", true, false},
		{"application/json; charset", "POST", true, false}, {"application/x-ndjson", "POST", true, true},
		{"application/jsonl; x=\"y\"", "POST", true, true}, {"multipart/form-data; boundary=x", "POST", true, false},
		{"application/json;;", "DELETE", true, false}, {"application/json\x00", "POST", true, false}, {" \t", "PATCH", true, false},
		{"application/vnd.api+json", "POST", true, false}, {"text/json", "POST", true, false}, {"/", "POST", false, false},
	} {
		f.Add(seed.ct, seed.method, seed.body, seed.bulk)
	}
	engine := New(Options{Logger: discardLogger()})
	g := engine.Group("/api", requireBodyType)
	ok := func(c *gin.Context) { c.Status(http.StatusNoContent) }
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodGet} {
		g.Handle(m, "/x", ok)
		g.Handle(m, "/x/bulk", ok)
	}
	f.Fuzz(func(t *testing.T, ct, method string, body, bulk bool) {
		switch method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodGet:
		default:
			method = http.MethodPost
		}
		path, want := "/api/x", "application/json"
		if bulk {
			path, want = "/api/x/bulk", "application/x-ndjson or application/jsonl"
		}
		var req *http.Request
		if body {
			req = httptest.NewRequest(method, path, strings.NewReader(`{"a":1}`))
		} else {
			req = httptest.NewRequest(method, path, nil)
		}
		if ct != "" {
			req.Header["Content-Type"] = []string{ct}
		}
		w := httptest.NewRecorder()
		engine.ServeHTTP(w, req)

		mediaType, parsed := parseMediaType(ct)
		accepted := parsed && (mediaType == "application/json" && !bulk ||
			(mediaType == "application/x-ndjson" || mediaType == "application/jsonl") && bulk)
		exempt := method == http.MethodGet || strings.TrimSpace(ct) == "" && !body && method != http.MethodPost
		switch w.Code {
		case http.StatusNoContent:
			if !accepted && !exempt {
				t.Fatalf("%s %s with Content-Type %q (body %v) let through", method, path, ct, body)
			}
		case http.StatusUnsupportedMediaType:
			if accepted || exempt {
				t.Fatalf("%s %s with Content-Type %q (body %v) refused", method, path, ct, body)
			}
			var e Error
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Code != CodeUnsupportedMedia ||
				!strings.Contains(e.Cause, "Content-Type") || !strings.HasSuffix(e.Cause, "send "+want) {
				t.Fatalf("415 body %s (%v)", w.Body, err)
			}
		default:
			t.Fatalf("%s %s with Content-Type %q: %d %s", method, path, ct, w.Code, w.Body)
		}
		if parsed && (mediaType != strings.ToLower(mediaType) || strings.ContainsAny(mediaType, "; \t") || mediaType == "") {
			t.Fatalf("Content-Type %q parsed as media type %q", ct, mediaType)
		}
	})
}
