package apicheck_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"tvsm/internal/testkit/apicheck"
)

// The documents load, are valid OpenAPI 3.1 and compile.
func TestLoad(t *testing.T) {
	if _, err := apicheck.Load(); err != nil {
		t.Fatal(err)
	}
}

const account = `{"id":7,"enabled":true,"login":"anna","pin_md5":null,"fullname":"Anna","provider":1,` +
	`"remote_custom_field":null,"contract_info":null,"main_address":null,"account_desc":null,"provider_dto":null,` +
	`"region_tag":null,"region_dto":null,"devices_per_account_limit":null,"created":1767225600,"updated":1767225600,` +
	`"last_online":null,"services_available":false}`

const errorBody = `{"statusCode":404,"cause":"no account 7","error":"not_found"}`

var jsonType = http.Header{"Content-Type": {"application/json; charset=utf-8"}}

// Check accepts answers as documented and names what is wrong in the
// others: statuses, content types, missing, extra and mistyped keys,
// required headers, NDJSON lines, and operations the documents lack.
func TestCheck(t *testing.T) {
	c, err := apicheck.Load()
	if err != nil {
		t.Fatal(err)
	}
	// A bulk answer: NDJSON, with the write's position and the trailer
	// that will carry the final one.
	ndjson := http.Header{"Content-Type": {"application/x-ndjson; charset=utf-8"},
		"X-Tvsm-Position": {"123/120"}, "Trailer": {"X-TVSM-Position"}}
	with := func(h http.Header, key, value string) http.Header {
		h = h.Clone()
		h.Set(key, value)
		return h
	}
	without := func(h http.Header, key string) http.Header {
		h = h.Clone()
		h.Del(key)
		return h
	}
	stats := func(closed string) http.Header {
		h := jsonType.Clone()
		if closed != "" {
			h.Set("X-TVSM-Closed-Through", closed)
		}
		return h
	}
	for _, tc := range []struct {
		name, method, path string
		status             int
		header             http.Header
		body               string
		want               string // "" for no mismatch, else a part of it
	}{
		{"documented", "GET", "/api/provider/accounts/7", 200, jsonType, account, ""},
		{"trailing slash", "GET", "/api/provider/accounts/7/", 200, jsonType, account, ""},
		{"a key missing", "GET", "/api/provider/accounts/7", 200, jsonType, strings.Replace(account, `"login":"anna",`, "", 1), "missing property 'login'"},
		{"a key added", "GET", "/api/provider/accounts/7", 200, jsonType, strings.Replace(account, `{"id":7,`, `{"id":7,"extra":1,`, 1), "extra"},
		{"a mistyped key", "GET", "/api/provider/accounts/7", 200, jsonType, strings.Replace(account, `"provider":1,`, `"provider":"1",`, 1), "provider"},
		{"not JSON", "GET", "/api/provider/accounts/7", 200, jsonType, `{"id":7,`, "cannot be decoded"},
		{"documented error", "GET", "/api/provider/accounts/7", 404, jsonType, errorBody, ""},
		{"error body not the error schema", "GET", "/api/provider/accounts/7", 404, jsonType, `{"message":"gone"}`, "statusCode"},
		{"undocumented status", "GET", "/api/provider/accounts/7", 418, jsonType, errorBody, "418"},
		{"undocumented content type", "GET", "/api/provider/accounts/7", 200, http.Header{"Content-Type": {"text/plain"}}, "anna", "text/plain"},
		{"unknown route answered 404", "GET", "/api/provider/nothing", 404, jsonType, errorBody, ""},
		{"unknown method answered 404", "PATCH", "/api/provider/accounts/7", 404, jsonType, errorBody, ""},
		{"unknown route answered 200", "GET", "/api/provider/nothing", 200, jsonType, `{}`, "no operation"},
		{"NDJSON lines", "POST", "/api/provider/accounts/bulk", 200, ndjson,
			"{\"line\":1,\"login\":\"anna\",\"status\":200,\"result\":\"created\",\"id\":7}\n\n{\"status\":400,\"error\":" + errorBody + "}\n", ""},
		{"an NDJSON line wrong", "POST", "/api/provider/accounts/bulk", 200, ndjson,
			"{\"line\":1,\"login\":\"anna\",\"status\":200,\"result\":\"created\",\"id\":7}\n{\"line\":2,\"status\":200,\"result\":\"made\"}\n", "$[1].result"},
		{"write without its position", "POST", "/api/provider/accounts/bulk", 200, without(ndjson, "X-TVSM-Position"),
			"{\"line\":1,\"login\":\"anna\",\"status\":200,\"result\":\"created\",\"id\":7}\n", "X-TVSM-Position"},
		{"bulk without its trailer", "POST", "/api/provider/accounts/bulk", 200, without(ndjson, "Trailer"),
			"{\"line\":1,\"login\":\"anna\",\"status\":200,\"result\":\"created\",\"id\":7}\n", "Trailer"},
		{"a position that is none", "POST", "/api/provider/accounts/bulk", 200, with(ndjson, "X-TVSM-Position", "next"),
			"{\"line\":1,\"login\":\"anna\",\"status\":200,\"result\":\"created\",\"id\":7}\n", "'next' does not match pattern"},
		{"required header", "GET", "/api/stats/device?from=2026-01-01&to=2026-01-02", 200, stats("2026-01-01"), `{"from":"2026-01-01","to":"2026-01-02","provider_stat":[]}`, ""},
		{"required header missing", "GET", "/api/stats/device?from=2026-01-01&to=2026-01-02", 200, stats(""), `{"from":"2026-01-01","to":"2026-01-02","provider_stat":[]}`, "X-TVSM-Closed-Through"},
		{"not an API", "GET", "/metrics", 200, http.Header{"Content-Type": {"text/plain"}}, "x 1", ""},
		{"a document", "GET", "/api/admin/openapi.json", 200, jsonType, "{}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, nil)
			err := c.Check(req, tc.status, tc.header, []byte(tc.body), false)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("mismatch: %v", err)
			case tc.want != "" && err == nil:
				t.Errorf("no mismatch, want one naming %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("mismatch %v, want one naming %q", err, tc.want)
			}
		})
	}
	// A body cut at MaxBody: status, headers and content type only.
	req := httptest.NewRequest("GET", "/api/provider/accounts/7", nil)
	if err := c.Check(req, 200, jsonType, []byte(account[:20]), true); err != nil {
		t.Errorf("truncated body: %v", err)
	}
	if err := c.Check(req, 418, jsonType, []byte(account[:20]), true); err == nil {
		t.Error("truncated body with an undocumented status: no mismatch")
	}
}

func TestRoute(t *testing.T) {
	for path, want := range map[string]string{
		"/api/provider/accounts":             "provider",
		"/api/provider/accounts/":            "provider",
		"/api/admin/admins/root":             "admin",
		"/api/device/billing/tariff/3":       "device",
		"/api/stats/account":                 "stats",
		"/api/provider":                      "provider",
		"/api/provider/openapi.json":         "",
		"/api/stats/openapi.yaml":            "",
		"/api/admin/swagger-ui/index.html":   "",
		"/api/admin/swagger-ui":              "",
		"/api/admin/debug/pprof/heap":        "",
		"/api/other/thing":                   "",
		"/admin/":                            "",
		"/healthz":                           "",
		"/metrics":                           "",
		"/api/provider/swagger-ui-notreally": "provider",
	} {
		if got := apicheck.Route(path); got != want {
			t.Errorf("Route(%q) = %q, want %q", path, got, want)
		}
	}
}

// The websocket's messages are schemas of the Device document.
func TestSchema(t *testing.T) {
	c, err := apicheck.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		schema, data string
		ok           bool
	}{
		{"WsCommand", `{"type":"command","id":"12-0-7","command":{"command":"user_message","type":"notify","text":"hi"}}`, true},
		{"WsCommand", `{"type":"command","id":"12-0-7"}`, false},
		{"WsDeviceMessage", `{"type":"ack","id":"12-0-7"}`, true},
		{"WsDeviceMessage", `{"type":"confirm","id":"12-0-7","extra":true}`, true},
		{"WsDeviceMessage", `{"type":"nack","id":"12-0-7"}`, false},
		{"WsCloseCode", `4001`, true},
		{"WsCloseCode", `4002`, false},
	} {
		err := c.Schema("device", tc.schema, []byte(tc.data))
		if (err == nil) != tc.ok {
			t.Errorf("%s %s: %v, want ok %v", tc.schema, tc.data, err, tc.ok)
		}
	}
	if err := c.Schema("device", "NoSuchSchema", []byte(`{}`)); err == nil {
		t.Error("an unknown schema: no error")
	}
}

// recordingTB is a testing.TB whose Errorf records instead of failing.
type recordingTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recordingTB) recorded() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

// Handler passes answers through, streamed as they are written, and
// fails the test on the ones that do not match.
func TestHandler(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/provider/accounts/7", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if r.URL.Query().Get("wrong") != "" {
			_, _ = io.WriteString(w, `{"id":"7"}`)
			return
		}
		_, _ = io.WriteString(w, account[:30])
		w.(http.Flusher).Flush() // the recorder flushes through
		_, _ = io.WriteString(w, account[30:])
	})
	tb := &recordingTB{TB: t}
	srv := httptest.NewServer(apicheck.Handler(tb, mux))
	defer srv.Close()
	get := func(path string) string {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if body := get("/api/provider/accounts/7"); body != account {
		t.Errorf("body %s, want it passed through", body)
	}
	if errs := tb.recorded(); len(errs) != 0 {
		t.Fatalf("a documented answer failed: %v", errs)
	}
	get("/api/provider/accounts/7?wrong=1")
	if errs := tb.recorded(); len(errs) != 1 || !strings.Contains(errs[0], "/api/provider/accounts/7") {
		t.Errorf("a wrong answer recorded %v, want one error naming the request", errs)
	}
}
