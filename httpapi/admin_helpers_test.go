package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"testing"

	"tvsm/eventstore"
	"tvsm/internal/testkit/nodetest"
)

// Black-box tests of the Admin API: a real node behind a real HTTP server,
// driven over HTTP. Helpers are prefixed adm so they never meet the
// Provider API tests' helpers in this package.

// admClient is an Admin API client for one admin.
type admClient struct {
	env         *nodetest.Env
	login, pass string
}

func admSuper(env *nodetest.Env) admClient {
	return admClient{env: env, login: env.SuperLogin, pass: env.SuperPassword}
}

// call sends a request to /api/admin+path.
func (a admClient) call(t testing.TB, method, path string, body any) (int, []byte) {
	t.Helper()
	return a.env.Do(t, method, "/api/admin"+path, a.login, a.pass, body)
}

// callHeader is call with extra headers.
func (a admClient) callHeader(t testing.TB, method, path string, body any, h http.Header) (int, []byte) {
	t.Helper()
	return a.env.DoHeader(t, method, "/api/admin"+path, a.login, a.pass, body, h)
}

// ok sends a request that must answer 200 and returns the decoded object.
func (a admClient) ok(t testing.TB, method, path string, body any) map[string]any {
	t.Helper()
	status, resp := a.call(t, method, path, body)
	if status != http.StatusOK {
		t.Fatalf("%s %s: status %d, want 200: %s", method, path, status, resp)
	}
	return admDecode(t, resp)
}

// fail sends a request that must answer status and returns its error body.
func (a admClient) fail(t testing.TB, status int, method, path string, body any) admError {
	t.Helper()
	got, resp := a.call(t, method, path, body)
	if got != status {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, got, status, resp)
	}
	var e admError
	if err := json.Unmarshal(resp, &e); err != nil {
		t.Fatalf("%s %s: error body %q: %v", method, path, resp, err)
	}
	if e.Status != status {
		t.Fatalf("%s %s: statusCode %d in the body, want %d", method, path, e.Status, status)
	}
	return e
}

// admError is the API's error body.
type admError struct {
	Status int               `json:"statusCode"`
	Cause  string            `json:"cause"`
	Code   string            `json:"error"`
	Fields map[string]string `json:"fields"`
}

// wantField fails unless the error names field.
func (e admError) wantField(t testing.TB, field string) {
	t.Helper()
	if _, ok := e.Fields[field]; !ok {
		t.Fatalf("error %+v does not name field %q", e, field)
	}
}

func admDecode(t testing.TB, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("decode %q: %v", data, err)
	}
	return m
}

// admSame fails unless got holds exactly the JSON want (same fields, same
// values; order and spacing aside).
func admSame(t testing.TB, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %q: %v", want, err)
	}
	var g any
	switch v := got.(type) {
	case []byte:
		if err := json.Unmarshal(v, &g); err != nil {
			t.Fatalf("decode %q: %v", v, err)
		}
	default:
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &g); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(g, w) {
		gj, _ := json.Marshal(g)
		wj, _ := json.Marshal(w)
		t.Fatalf("got  %s\nwant %s", gj, wj)
	}
}

// admID returns the integer id of an object.
func admID(t testing.TB, m map[string]any) int64 {
	t.Helper()
	f, ok := m["id"].(float64)
	if !ok {
		t.Fatalf("no numeric id in %v", m)
	}
	return int64(f)
}

func admPath(base string, id int64) string { return base + "/" + admItoa(id) }

func admItoa(n int64) string { return strconv.FormatInt(n, 10) }

// admList is a decoded list envelope.
type admList struct {
	Data  []map[string]any `json:"data"`
	Total int              `json:"total"`
	Start int              `json:"start"`
	Limit int              `json:"limit"`
}

func (a admClient) list(t testing.TB, path string) admList {
	t.Helper()
	status, resp := a.call(t, http.MethodGet, path, nil)
	if status != http.StatusOK {
		t.Fatalf("GET %s: status %d: %s", path, status, resp)
	}
	var l admList
	if err := json.Unmarshal(resp, &l); err != nil {
		t.Fatalf("GET %s: %q: %v", path, resp, err)
	}
	if l.Data == nil {
		t.Fatalf("GET %s: data is not a list: %s", path, resp)
	}
	return l
}

// ids returns the ids of a list's items in order.
func (l admList) ids(t testing.TB) []int64 {
	t.Helper()
	out := make([]int64, len(l.Data))
	for i, m := range l.Data {
		out[i] = admID(t, m)
	}
	return out
}

// admHead returns the position of the newest event in the store.
func admHead(t testing.TB, env *nodetest.Env) eventstore.Position {
	t.Helper()
	p, err := env.Store.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// admNoEvents runs f and fails if the store's head moved.
func admNoEvents(t testing.TB, env *nodetest.Env, what string, f func()) {
	t.Helper()
	before := admHead(t, env)
	f()
	if after := admHead(t, env); after != before {
		t.Fatalf("%s appended events: head %v → %v", what, before, after)
	}
}

// admScoped creates an admin limited to provider and returns its client.
func admScoped(t testing.TB, env *nodetest.Env, login string, provider int64) admClient {
	t.Helper()
	pass := login + "-password"
	admSuper(env).ok(t, http.MethodPost, "/admins", map[string]any{"login": login, "password": pass, "provider": provider})
	return admClient{env: env, login: login, pass: pass}
}

// admProvider creates a provider named name and returns its id.
func admProvider(t testing.TB, env *nodetest.Env, name string) int64 {
	t.Helper()
	return admID(t, admSuper(env).ok(t, http.MethodPost, "/providers", map[string]any{"name": name}))
}
