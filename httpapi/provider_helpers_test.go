package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/internal/app"
	"tvsm/internal/testkit/nodetest"
)

// Black-box tests of the Provider API: a real node (embedded store, read
// model, services) behind a real HTTP server, driven over HTTP.

// papi is a Provider API client for one admin.
type papi struct {
	env         *nodetest.Env
	login, pass string
}

func superClient(env *nodetest.Env) papi {
	return papi{env: env, login: env.SuperLogin, pass: env.SuperPassword}
}

func (p papi) do(t testing.TB, method, path string, body any) (int, []byte) {
	t.Helper()
	return p.env.Do(t, method, "/api/provider"+path, p.login, p.pass, body)
}

func (p papi) doHeader(t testing.TB, method, path string, body any, h http.Header) (int, []byte) {
	t.Helper()
	return p.env.DoHeader(t, method, "/api/provider"+path, p.login, p.pass, body, h)
}

// ok sends a request that must answer 200 and decodes the answer.
func (p papi) ok(t testing.TB, method, path string, body any) obj {
	t.Helper()
	status, resp := p.do(t, method, path, body)
	if status != http.StatusOK {
		t.Fatalf("%s %s: status %d, want 200: %s", method, path, status, resp)
	}
	return decodeObj(t, resp)
}

// fails sends a request that must answer status and returns its error body.
func (p papi) fails(t testing.TB, status int, method, path string, body any) apiError {
	t.Helper()
	got, resp := p.do(t, method, path, body)
	if got != status {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, got, status, resp)
	}
	var e apiError
	if err := json.Unmarshal(resp, &e); err != nil {
		t.Fatalf("%s %s: error body %q: %v", method, path, resp, err)
	}
	if e.Status != status {
		t.Fatalf("%s %s: statusCode %d in body, want %d", method, path, e.Status, status)
	}
	return e
}

// field checks that a 400 names field.
func (e apiError) field(t testing.TB, field string) string {
	t.Helper()
	problem, ok := e.Fields[field]
	if !ok {
		t.Fatalf("error %+v does not name field %q", e, field)
	}
	return problem
}

type apiError struct {
	Status int               `json:"statusCode"`
	Cause  string            `json:"cause"`
	Code   string            `json:"error"`
	Fields map[string]string `json:"fields"`
}

// obj is a decoded JSON object, numbers as json.Number.
type obj map[string]any

func decodeObj(t testing.TB, data []byte) obj {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	var o obj
	if err := dec.Decode(&o); err != nil {
		t.Fatalf("decode %q: %v", data, err)
	}
	return o
}

func (o obj) id(t testing.TB) int64 { t.Helper(); return o.int(t, "id") }

func (o obj) int(t testing.TB, key string) int64 {
	t.Helper()
	n, ok := o[key].(json.Number)
	if !ok {
		t.Fatalf("%s = %#v, want a number (in %v)", key, o[key], o)
	}
	v, err := n.Int64()
	if err != nil {
		t.Fatalf("%s = %v: %v", key, n, err)
	}
	return v
}

func (o obj) str(t testing.TB, key string) string {
	t.Helper()
	s, ok := o[key].(string)
	if !ok {
		t.Fatalf("%s = %#v, want a string (in %v)", key, o[key], o)
	}
	return s
}

// list is the list envelope.
func (o obj) list(t testing.TB) []obj {
	t.Helper()
	raw, ok := o["data"].([]any)
	if !ok {
		t.Fatalf("data = %#v, want a list", o["data"])
	}
	out := make([]obj, len(raw))
	for i, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			t.Fatalf("data[%d] = %#v, want an object", i, r)
		}
		out[i] = obj(m)
	}
	return out
}

// ids returns the ids of a list's items.
func ids(t testing.TB, items []obj) []int64 {
	t.Helper()
	out := make([]int64, len(items))
	for i, it := range items {
		out[i] = it.id(t)
	}
	return out
}

// superadmin creates through the Admin API.

func mustProvider(t testing.TB, env *nodetest.Env, name string) int64 {
	t.Helper()
	status, body := env.Super(t, http.MethodPost, "/api/admin/providers", map[string]any{"name": name})
	if status != http.StatusOK {
		t.Fatalf("create provider: %d %s", status, body)
	}
	return decodeObj(t, body).id(t)
}

func mustTariff(t testing.TB, env *nodetest.Env, provider int64, name string) int64 {
	t.Helper()
	status, body := env.Super(t, http.MethodPost, "/api/admin/tariffs", map[string]any{"provider": provider, "name": name})
	if status != http.StatusOK {
		t.Fatalf("create tariff: %d %s", status, body)
	}
	return decodeObj(t, body).id(t)
}

// scopedClient creates an admin of provider and returns its client.
func scopedClient(t testing.TB, env *nodetest.Env, login string, provider int64) papi {
	t.Helper()
	pass := login + "-secret"
	status, body := env.Super(t, http.MethodPost, "/api/admin/admins", map[string]any{"login": login, "password": pass, "provider": provider})
	if status != http.StatusOK {
		t.Fatalf("create admin: %d %s", status, body)
	}
	return papi{env: env, login: login, pass: pass}
}

// pin returns a valid pin_md5.
func pin(s string) string {
	return fmt.Sprintf("%032x", []byte(s + "                                ")[:16])
}

// accountBody is a create body for login of provider.
func accountBody(provider int64, login string) map[string]any {
	return map[string]any{
		"enabled":  true,
		"login":    login,
		"pin_md5":  pin(login),
		"fullname": "Subscriber " + login,
		"provider": provider,
	}
}

// head returns the position of the newest event in the store.
func head(t testing.TB, env *nodetest.Env) eventstore.Position {
	t.Helper()
	p, err := env.Store.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// bindDevice binds a device to an account through the domain command, as
// the Device API will (devices are not created through the Provider API).
func bindDevice(t testing.TB, env *nodetest.Env, account int64, uniqueID string) int64 {
	t.Helper()
	ctx := context.Background()
	x := env.Node.Executor
	id, err := x.NextID(ctx, "device")
	if err != nil {
		t.Fatal(err)
	}
	cmd := domain.BindDevice{AccountID: account, DeviceID: id, UniqueID: uniqueID, Class: domain.DeviceSTB, Model: "box-1"}
	res, err := app.Execute(ctx, x, cmd.Stream(), domain.AccountDecider(), domain.AccountCommand(cmd),
		app.RequestMeta{Actor: domain.DeviceActor(id), RequestID: "test-bind-" + uniqueID})
	if err != nil {
		t.Fatalf("bind device: %v", err)
	}
	if err := app.WaitApplied(ctx, env.Node.Runner.Progress(), res.Position, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	return id
}

// parseDateTime parses the API's date-time output form.
func parseDateTime(s string) (time.Time, error) { return time.Parse("2006-01-02T15:04:05-0700", s) }
