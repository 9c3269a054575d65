package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"tvsm/httpapi"
	"tvsm/httpapi/apidoc"
	"tvsm/internal/platform/connlimit"
	"tvsm/internal/testkit/apicheck"
	"tvsm/internal/testkit/nodetest"
)

// The OpenAPI coverage: every route of the node's engine, enumerated from
// the engine itself, is an operation of exactly one document, the one of
// its API (/api/{provider,admin,device,stats}/...), and every operation a
// document describes is a route of the engine. What is no API (apicheck.Route
// says which) must be one of nonAPIRoutes, so that a new route outside the
// documents is a decision, not an oversight. Whether the answers match the
// documents is checked on every request of every black-box test (nodetest
// wraps each node with apicheck).

// nonAPIRoutes are the routes of a node that no document describes, and why.
// Each must be routed by the node nodetest starts (which serves /metrics and
// the profiler on the main listener).
var nonAPIRoutes = withRoutes(documentRoutes(), map[string]string{
	"GET /healthz": "liveness probe (load balancers and orchestrators, not API clients)",
	"GET /readyz":  "readiness probe: 503 while the read model or the command dispatcher catches up, does not follow the store or is stuck",
	"GET /metrics": "Prometheus scrape",
	// Go's profiler, which the operators' listener serves in production.
	"GET /api/admin/debug/pprof":          "profiler",
	"GET /api/admin/debug/pprof/cmdline":  "profiler",
	"GET /api/admin/debug/pprof/profile":  "profiler",
	"GET /api/admin/debug/pprof/symbol":   "profiler",
	"GET /api/admin/debug/pprof/trace":    "profiler",
	"GET /api/admin/debug/pprof/:profile": "profiler",
	// The admin console: a browser page and its scripts and styles, which
	// call the Provider, Admin and Statistics APIs (whose documents
	// describe every call it makes); no API of its own.
	"GET /admin":       "the admin console's page",
	"GET /admin/*file": "the admin console's files",
})

// withSwaggerUI are the APIs whose document Swagger UI shows (the Device
// API's clients are devices, not people).
var withSwaggerUI = []string{apidoc.Provider, apidoc.Admin, apidoc.Stats}

// documentRoutes are the routes Mount adds for the documents: each API's
// document and, for withSwaggerUI, the viewer. They are public, and no API.
func documentRoutes() map[string]string {
	routes := map[string]string{}
	for _, name := range apidoc.Names() {
		base := "GET /api/" + name
		routes[base+"/openapi.json"] = "API document"
		routes[base+"/openapi.yaml"] = "API document"
		if slices.Contains(withSwaggerUI, name) {
			routes[base+"/swagger-ui"] = "API document viewer"
			routes[base+"/swagger-ui/*file"] = "API document viewer"
		}
	}
	return routes
}

// withRoutes adds more to routes and returns it.
func withRoutes(routes, more map[string]string) map[string]string {
	maps.Copy(routes, more)
	return routes
}

// ginParam is a gin path parameter (":id") or wildcard ("*file").
var ginParam = regexp.MustCompile(`[:*]([A-Za-z_]+)`)

// openAPIPath writes a gin route path as OpenAPI writes it: {id} for :id.
func openAPIPath(route string) string { return ginParam.ReplaceAllString(route, "{$1}") }

type operation struct{ method, path string }

func (o operation) String() string { return o.method + " " + o.path }

// documentedOperations returns each document's operations.
func documentedOperations(t *testing.T) map[string][]operation {
	t.Helper()
	ops := map[string][]operation{}
	for _, name := range apidoc.Names() {
		doc, err := apidoc.Document(name)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Paths map[string]map[string]json.RawMessage `json:"paths"`
		}
		if err := json.Unmarshal(doc.JSON, &d); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for path, item := range d.Paths {
			for method := range item {
				switch method {
				case "get", "put", "post", "delete", "patch", "head", "options", "trace":
					ops[name] = append(ops[name], operation{strings.ToUpper(method), path})
				}
			}
		}
	}
	return ops
}

func TestOpenAPICoversEveryRoute(t *testing.T) {
	env := nodetest.Start(t)
	documented := documentedOperations(t)
	inDocs := map[operation][]string{}
	for name, ops := range documented {
		for _, op := range ops {
			inDocs[op] = append(inDocs[op], name)
		}
	}

	routes := map[operation]bool{}
	apis := map[string]int{}
	nonAPI := map[string]bool{}
	for _, r := range env.Node.Engine.Routes() {
		api := apicheck.Route(r.Path)
		if api == "" {
			route := r.Method + " " + r.Path
			nonAPI[route] = true
			if _, ok := nonAPIRoutes[route]; !ok {
				t.Errorf("route %s is no API's (apicheck.Route) and not in nonAPIRoutes: document it, or list it there with the reason", route)
			}
			continue
		}
		if _, ok := nonAPIRoutes[r.Method+" "+r.Path]; ok {
			t.Errorf("route %s is in nonAPIRoutes but apicheck.Route gives it to the %s API", r.Method+" "+r.Path, api)
		}
		op := operation{r.Method, openAPIPath(r.Path)}
		routes[op] = true
		apis[api]++
		switch docs := inDocs[op]; {
		case len(docs) == 0:
			t.Errorf("route %s is in no OpenAPI document (add it to httpapi/apidoc/%s.yaml)", op, api)
		case len(docs) > 1:
			t.Errorf("route %s is in the documents %v: it belongs to %s's only", op, docs, api)
		case docs[0] != api:
			t.Errorf("route %s is in the %s document: it belongs to %s's", op, docs[0], api)
		}
	}
	for name, ops := range documented {
		for _, op := range ops {
			if !routes[op] {
				t.Errorf("the %s document describes %s, which the engine does not route", name, op)
			}
			if api := apicheck.Route(op.path); api != name {
				t.Errorf("the %s document describes %s, which is %q's", name, op, api)
			}
		}
	}
	for route := range nonAPIRoutes {
		if !nonAPI[route] {
			t.Errorf("nonAPIRoutes lists %s, which the engine does not route (or apicheck.Route gives to an API)", route)
		}
	}
	// The enumeration itself: each API has routes (a node that mounted
	// nothing would pass the checks above).
	for _, name := range apidoc.Names() {
		if apis[name] == 0 {
			t.Errorf("the engine routes nothing of the %s API", name)
		}
	}
}

// Each API serves its document without credentials, as JSON and YAML;
// the Provider, Admin and Statistics APIs also Swagger UI.
func TestOpenAPIServed(t *testing.T) {
	env := nodetest.Start(t)
	for _, name := range apidoc.Names() {
		base := "/api/" + name
		status, body := env.Do(t, http.MethodGet, base+"/openapi.json", "", "", nil)
		var doc struct {
			OpenAPI string         `json:"openapi"`
			Paths   map[string]any `json:"paths"`
		}
		if err := json.Unmarshal(body, &doc); status != http.StatusOK || err != nil {
			t.Fatalf("%s/openapi.json: %d %v", base, status, err)
		}
		if doc.OpenAPI != "3.1.0" || len(doc.Paths) == 0 {
			t.Errorf("%s/openapi.json: openapi %q, %d paths", base, doc.OpenAPI, len(doc.Paths))
		}
		if status, body := env.Do(t, http.MethodGet, base+"/openapi.yaml", "", "", nil); status != http.StatusOK || !strings.Contains(string(body), "openapi: 3.1.0") {
			t.Errorf("%s/openapi.yaml: %d %.80s", base, status, body)
		}
		status, body = env.Do(t, http.MethodGet, base+"/swagger-ui/index.html", "", "", nil)
		wantUI := slices.Contains(withSwaggerUI, name)
		if got := status == http.StatusOK && strings.Contains(string(body), "swagger-ui-bundle.js"); got != wantUI {
			t.Errorf("%s/swagger-ui/index.html: %d, want the page: %v", base, status, wantUI)
		}
	}
}

// The position headers through a node, as the documents describe them
// (apicheck checks each answer): a write answers X-TVSM-Position, a read
// sending it back as X-TVSM-Min-Position is answered, and a malformed one
// is a 400 naming the header, on every API.
func TestOpenAPIPositionHeaders(t *testing.T) {
	env := nodetest.Start(t)
	resp, body := env.DoResponse(t, http.MethodPost, "/api/admin/providers", env.SuperLogin, env.SuperPassword, map[string]any{"name": "Positions"}, nil)
	pos := resp.Header.Get("X-TVSM-Position")
	if resp.StatusCode != http.StatusOK || pos == "" {
		t.Fatalf("create: %d, X-TVSM-Position %q: %s", resp.StatusCode, pos, body)
	}
	for _, path := range []string{"/api/admin/providers", "/api/provider/accounts", "/api/stats/account?from=2026-01-01&to=2026-01-02"} {
		status, body := env.DoHeader(t, http.MethodGet, path, env.SuperLogin, env.SuperPassword, nil, http.Header{"X-TVSM-Min-Position": {pos}})
		if status != http.StatusOK {
			t.Errorf("%s with the write's position: %d %s", path, status, body)
		}
		status, body = env.DoHeader(t, http.MethodGet, path, env.SuperLogin, env.SuperPassword, nil, http.Header{"X-TVSM-Min-Position": {"next"}})
		var e struct {
			Fields map[string]string `json:"fields"`
		}
		if err := json.Unmarshal(body, &e); status != http.StatusBadRequest || err != nil || e.Fields["X-TVSM-Min-Position"] == "" {
			t.Errorf("%s with a malformed position: %d %s, want 400 naming X-TVSM-Min-Position", path, status, body)
		}
	}
	// The header is read before credentials, so a device route answers
	// the 400 too.
	for _, path := range []string{"/api/device/channels", "/api/device/ws"} {
		status, body := env.DoHeader(t, http.MethodGet, path, "", "", nil, http.Header{"X-TVSM-Min-Position": {"next"}})
		if status != http.StatusBadRequest || !strings.Contains(string(body), "X-TVSM-Min-Position") {
			t.Errorf("%s with a malformed position: %d %s, want 400 naming X-TVSM-Min-Position", path, status, body)
		}
	}
}

// A connection refused by a cap is answered before any route is known, so
// its answer must be one every operation documents: 429 for the address's
// share, 503 for the node's, each with the error body and Retry-After.
func TestOpenAPIDescribesConnectionRefusals(t *testing.T) {
	c, err := apicheck.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, reason := range []connlimit.Reason{connlimit.PerAddress, connlimit.Total} {
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(httpapi.ConnectionRefusal(reason))), nil)
		if err != nil {
			t.Fatalf("%v: %v", reason, err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%v: %v", reason, err)
		}
		if resp.Header.Get("Retry-After") == "" {
			t.Errorf("%v: no Retry-After", reason)
		}
		for _, ops := range documentedOperations(t) {
			for _, op := range ops {
				req := httptest.NewRequest(op.method, strings.NewReplacer("{id}", "1", "{login}", "root", "{recipients}", "devices").Replace(op.path), nil)
				if err := c.Check(req, resp.StatusCode, resp.Header, body, false); err != nil {
					t.Errorf("%v refusal of %s: %v", reason, op, err)
				}
			}
		}
	}
}
