package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"tvsm/internal/testkit/nodetest"
)

func TestAdminProviderRoundTrip(t *testing.T) {
	env := nodetest.Start(t)
	su := admSuper(env)

	created := su.ok(t, http.MethodPost, "/providers", map[string]any{
		"id":                        nil, // read-only on create: ignored
		"name":                      "Acme TV",
		"enabled":                   "1",
		"devices_per_account_limit": "3",
		"billing":                   map[string]any{"resolve": true, "url": "https://billing.acme.tv/api", "token": "s3cret"},
	})
	id := admID(t, created)
	want := `{"id":` + admItoa(id) + `,"name":"Acme TV","enabled":true,"devices_per_account_limit":3,"free_tariff":null,
		"region_tag":null,"comment":null,"logo_url":null,"billing":{"resolve":true,"url":"https://billing.acme.tv/api","token_set":true}}`
	admSame(t, created, want)

	status, raw := su.call(t, http.MethodGet, admPath("/providers", id), nil)
	if status != http.StatusOK {
		t.Fatalf("GET: %d %s", status, raw)
	}
	admSame(t, raw, want)
	if strings.Contains(string(raw), "s3cret") || strings.Contains(string(raw), `"token"`) {
		t.Fatalf("the billing token is returned: %s", raw)
	}

	// POST with id: partial update; the other fields stay.
	updated := su.ok(t, http.MethodPost, "/providers", map[string]any{"id": id, "name": "Acme", "free_tariff": nil})
	admSame(t, updated, strings.Replace(want, `"Acme TV"`, `"Acme"`, 1))

	// PUT: partial update; null clears a nullable field, clearing the token
	// needs resolve off.
	updated = su.ok(t, http.MethodPut, admPath("/providers", id), map[string]any{
		"enabled": false, "devices_per_account_limit": nil,
		"billing": map[string]any{"resolve": false, "token": nil},
	})
	admSame(t, updated, `{"id":`+admItoa(id)+`,"name":"Acme","enabled":false,"devices_per_account_limit":null,"free_tariff":null,
		"region_tag":null,"comment":null,"logo_url":null,"billing":{"resolve":false,"url":"https://billing.acme.tv/api","token_set":false}}`)

	// The free tariff must be one of the provider's own tariffs.
	tariff := admID(t, su.ok(t, http.MethodPost, "/tariffs", map[string]any{"provider": id, "name": "Basic"}))
	updated = su.ok(t, http.MethodPut, admPath("/providers", id), map[string]any{"free_tariff": tariff})
	if updated["free_tariff"] != float64(tariff) {
		t.Fatalf("free_tariff = %v, want %d", updated["free_tariff"], tariff)
	}

	// DELETE answers with the provider as it was; then it is gone.
	deleted := su.ok(t, http.MethodDelete, admPath("/providers", id), nil)
	if deleted["name"] != "Acme" || deleted["id"] != float64(id) {
		t.Fatalf("DELETE answered %v", deleted)
	}
	su.fail(t, http.StatusNotFound, http.MethodGet, admPath("/providers", id), nil)
	su.fail(t, http.StatusNotFound, http.MethodDelete, admPath("/providers", id), nil)
	su.fail(t, http.StatusNotFound, http.MethodPut, admPath("/providers", id), map[string]any{"name": "x"})
	if l := su.list(t, "/providers"); l.Total != 0 {
		t.Fatalf("deleted provider still listed: %+v", l)
	}
}

func TestAdminProviderErrors(t *testing.T) {
	env := nodetest.Start(t)
	su := admSuper(env)
	other := admProvider(t, env, "Other")
	otherTariff := admID(t, su.ok(t, http.MethodPost, "/tariffs", map[string]any{"provider": other, "name": "T"}))
	id := admProvider(t, env, "Mine")

	cases := []struct {
		name   string
		method string
		path   string
		body   any
		status int
		field  string
	}{
		{"missing name", http.MethodPost, "/providers", map[string]any{"enabled": true}, 400, "name"},
		{"null name", http.MethodPost, "/providers", map[string]any{"name": nil}, 400, "name"},
		{"blank name", http.MethodPost, "/providers", map[string]any{"name": "  "}, 400, "name"},
		{"name too long", http.MethodPost, "/providers", map[string]any{"name": strings.Repeat("n", 101)}, 400, "name"},
		{"name not a string", http.MethodPost, "/providers", map[string]any{"name": []int{1}}, 400, "name"},
		{"enabled not a boolean", http.MethodPost, "/providers", map[string]any{"name": "x", "enabled": "maybe"}, 400, "enabled"},
		{"limit not an integer", http.MethodPost, "/providers", map[string]any{"name": "x", "devices_per_account_limit": 1.5}, 400, "devices_per_account_limit"},
		{"limit negative", http.MethodPost, "/providers", map[string]any{"name": "x", "devices_per_account_limit": -1}, 400, "devices_per_account_limit"},
		{"limit huge", http.MethodPost, "/providers", map[string]any{"name": "x", "devices_per_account_limit": "99999999999"}, 400, "devices_per_account_limit"},
		{"billing not an object", http.MethodPost, "/providers", map[string]any{"name": "x", "billing": "on"}, 400, "billing"},
		{"bad billing url", http.MethodPost, "/providers", map[string]any{"name": "x", "billing": map[string]any{"url": "ftp://b"}}, 400, "billing.url"},
		{"billing url not absolute", http.MethodPost, "/providers", map[string]any{"name": "x", "billing": map[string]any{"url": "/api"}}, 400, "billing.url"},
		{"resolve without url", http.MethodPost, "/providers", map[string]any{"name": "x", "billing": map[string]any{"resolve": true, "token": "t"}}, 400, "billing.url"},
		{"resolve without token", http.MethodPost, "/providers", map[string]any{"name": "x", "billing": map[string]any{"resolve": true, "url": "http://b"}}, 400, "billing.token"},
		{"resolve not a boolean", http.MethodPost, "/providers", map[string]any{"name": "x", "billing": map[string]any{"resolve": "yes"}}, 400, "billing.resolve"},
		{"free tariff on create", http.MethodPost, "/providers", map[string]any{"name": "x", "free_tariff": otherTariff}, 400, "free_tariff"},
		{"free tariff of another provider", http.MethodPut, admPath("/providers", id), map[string]any{"free_tariff": otherTariff}, 400, "free_tariff"},
		{"unknown free tariff", http.MethodPost, "/providers", map[string]any{"id": id, "free_tariff": 999}, 400, "free_tariff"},
		{"id not an integer", http.MethodPost, "/providers", map[string]any{"id": "x1", "name": "x"}, 400, "id"},
		{"id not positive", http.MethodPost, "/providers", map[string]any{"id": -4, "name": "x"}, 400, "id"},
		{"path id not an integer", http.MethodGet, "/providers/abc", nil, 400, "id"},
		{"path id and body id differ", http.MethodPut, admPath("/providers", id), map[string]any{"id": id + 1, "name": "x"}, 400, "id"},
		{"null name on update", http.MethodPut, admPath("/providers", id), map[string]any{"name": ""}, 400, "name"},
		{"unknown id (GET)", http.MethodGet, "/providers/4242", nil, 404, ""},
		{"unknown id (POST update)", http.MethodPost, "/providers", map[string]any{"id": 4242, "name": "x"}, 404, ""},
		{"unknown id (PUT)", http.MethodPut, "/providers/4242", map[string]any{"name": "x"}, 404, ""},
		{"unknown id (DELETE)", http.MethodDelete, "/providers/4242", nil, 404, ""},
		{"zero path id", http.MethodGet, "/providers/0", nil, 404, ""},
		{"body not JSON", http.MethodPost, "/providers", "{name:", 400, ""},
		{"body not an object", http.MethodPost, "/providers", "[1]", 400, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			admNoEvents(t, env, tc.name, func() {
				e := su.fail(t, tc.status, tc.method, tc.path, tc.body)
				if tc.field != "" {
					e.wantField(t, tc.field)
				}
			})
		})
	}

	t.Run("every bad field at once", func(t *testing.T) {
		e := su.fail(t, 400, http.MethodPost, "/providers", map[string]any{"enabled": "x", "billing": map[string]any{"url": "nope"}})
		e.wantField(t, "enabled")
		e = su.fail(t, 400, http.MethodPost, "/providers", map[string]any{"billing": map[string]any{"url": "nope"}})
		e.wantField(t, "name")
		e.wantField(t, "billing.url")
	})

	t.Run("unsupported media type", func(t *testing.T) {
		status, body := env.DoHeader(t, http.MethodPost, "/api/admin/providers", env.SuperLogin, env.SuperPassword,
			`{"name":"x"}`, http.Header{"Content-Type": {"text/plain"}})
		if status != http.StatusUnsupportedMediaType {
			t.Fatalf("status %d: %s", status, body)
		}
	})
}

func TestAdminUnauthenticated(t *testing.T) {
	env := nodetest.Start(t)
	for _, path := range []string{"/providers", "/tariffs", "/channels", "/categories", "/admins", "/providers/1", "/admins/root"} {
		for _, cred := range []struct{ login, pass string }{{"", ""}, {env.SuperLogin, "wrong-password"}, {"nobody", "whatever-pass"}} {
			c := admClient{env: env, login: cred.login, pass: cred.pass}
			c.fail(t, http.StatusUnauthorized, http.MethodGet, path, nil)
		}
	}
	admNoEvents(t, env, "unauthenticated create", func() {
		c := admClient{env: env, login: env.SuperLogin, pass: "nope-nope"}
		c.fail(t, http.StatusUnauthorized, http.MethodPost, "/providers", map[string]any{"name": "x"})
		c = admClient{env: env}
		c.fail(t, http.StatusUnauthorized, http.MethodDelete, "/admins/root", nil)
	})
}

func TestAdminIdempotencyKey(t *testing.T) {
	env := nodetest.Start(t)
	su := admSuper(env)
	key := http.Header{"Idempotency-Key": {"create-acme-1"}}
	body := map[string]any{"name": "Acme", "devices_per_account_limit": 2}

	status, first := su.callHeader(t, http.MethodPost, "/providers", body, key)
	if status != http.StatusOK {
		t.Fatalf("first: %d %s", status, first)
	}
	var second []byte
	admNoEvents(t, env, "a retry", func() {
		status, second = su.callHeader(t, http.MethodPost, "/providers", body, key)
	})
	if status != http.StatusOK || string(second) != string(first) {
		t.Fatalf("retry: %d %s, want 200 %s", status, second, first)
	}
	if l := su.list(t, "/providers"); l.Total != 1 {
		t.Fatalf("%d providers after a retried create, want 1", l.Total)
	}

	// Same key, another body: 422.
	status, resp := su.callHeader(t, http.MethodPost, "/providers", map[string]any{"name": "Other"}, key)
	if status != http.StatusUnprocessableEntity {
		t.Fatalf("same key, other body: %d %s", status, resp)
	}
	// Same key, a body spelled differently but meaning the same: replayed.
	status, resp = su.callHeader(t, http.MethodPost, "/providers", `{"devices_per_account_limit":"2", "name":"Acme"}`, key)
	if status != http.StatusOK || string(resp) != string(first) {
		t.Fatalf("equivalent body: %d %s", status, resp)
	}
	// Without a key, each POST creates.
	su.ok(t, http.MethodPost, "/providers", body)
	su.ok(t, http.MethodPost, "/providers", body)
	if l := su.list(t, "/providers"); l.Total != 3 {
		t.Fatalf("%d providers, want 3", l.Total)
	}
	// Keys of other kinds of objects are separate.
	status, resp = su.callHeader(t, http.MethodPost, "/categories", map[string]any{"name": "News"}, key)
	if status != http.StatusOK {
		t.Fatalf("category under a key used for a provider: %d %s", status, resp)
	}
	// An admin created twice under one key exists once and answers alike.
	akey := http.Header{"Idempotency-Key": {"admin-1"}}
	abody := map[string]any{"login": "ops", "password": "ops-password"}
	_, a1 := su.callHeader(t, http.MethodPost, "/admins", abody, akey)
	status, a2 := su.callHeader(t, http.MethodPost, "/admins", abody, akey)
	if status != http.StatusOK || string(a1) != string(a2) {
		t.Fatalf("admin retry: %d %s, first %s", status, a2, a1)
	}
	// A bad key is a 400.
	status, resp = su.callHeader(t, http.MethodPost, "/providers", body, http.Header{"Idempotency-Key": {strings.Repeat("k", 300)}})
	if status != http.StatusBadRequest {
		t.Fatalf("long key: %d %s", status, resp)
	}
}

func TestAdminNoopUpdatesAppendNothing(t *testing.T) {
	env := nodetest.Start(t)
	su := admSuper(env)
	cat := su.ok(t, http.MethodPost, "/categories", map[string]any{"name": "News"})
	ch := su.ok(t, http.MethodPost, "/channels", map[string]any{"name": "One", "number": 1, "logo_url": "https://x/1.png", "categories": []int64{admID(t, cat)}})
	p := su.ok(t, http.MethodPost, "/providers", map[string]any{"name": "P", "devices_per_account_limit": 2,
		"billing": map[string]any{"resolve": true, "url": "https://b", "token": "tok"}})
	tr := su.ok(t, http.MethodPost, "/tariffs", map[string]any{"provider": admID(t, p), "name": "T", "channels": []int64{admID(t, ch)}, "description": "d"})
	su.ok(t, http.MethodPost, "/admins", map[string]any{"login": "ops", "password": "ops-password", "provider": admID(t, p)})

	admNoEvents(t, env, "re-sending every object as read", func() {
		// What GET returns, sent back as it is (resync jobs do this).
		for _, o := range []struct {
			path string
			obj  map[string]any
		}{{"/categories", cat}, {"/channels", ch}, {"/providers", p}, {"/tariffs", tr}} {
			su.ok(t, http.MethodPut, admPath(o.path, admID(t, o.obj)), o.obj)
			su.ok(t, http.MethodPost, o.path, o.obj)
		}
		su.ok(t, http.MethodPut, "/admins/ops", map[string]any{"login": "ops", "provider": admID(t, p), "password": "ops-password"})
		su.ok(t, http.MethodPut, admPath("/providers", admID(t, p)), map[string]any{"billing": map[string]any{"token": "tok"}})
		su.ok(t, http.MethodPut, admPath("/providers", admID(t, p)), map[string]any{"name": nil, "enabled": nil})
	})
}
