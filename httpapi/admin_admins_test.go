package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"tvsm/internal/testkit/nodetest"
)

func TestAdminAdminRoundTrip(t *testing.T) {
	env := nodetest.Start(t)
	su := admSuper(env)
	p := admProvider(t, env, "Acme")

	// Create: the password is never returned.
	status, raw := su.call(t, http.MethodPost, "/admins", map[string]any{"login": "ops@acme.tv", "password": "first-password", "provider": p})
	if status != http.StatusOK {
		t.Fatalf("create: %d %s", status, raw)
	}
	want := `{"login":"ops@acme.tv","provider":` + admItoa(p) + `}`
	admSame(t, raw, want)
	status, raw = su.call(t, http.MethodGet, "/admins/ops@acme.tv", nil)
	if status != http.StatusOK {
		t.Fatalf("GET: %d %s", status, raw)
	}
	admSame(t, raw, want)
	if strings.Contains(string(raw), "password") || strings.Contains(string(raw), "$2") {
		t.Fatalf("password or hash returned: %s", raw)
	}
	if l := su.list(t, "/admins"); strings.Contains(strings.ToLower(admJoin(l)), "password") {
		t.Fatalf("list returns passwords: %+v", l)
	}

	// The new admin can log in at once.
	ops := admClient{env: env, login: "ops@acme.tv", pass: "first-password"}
	ops.ok(t, http.MethodGet, admPath("/providers", p), nil)

	// A password change takes effect immediately (the old one was cached
	// by a successful login just now).
	admSame(t, su.ok(t, http.MethodPut, "/admins/ops@acme.tv", map[string]any{"password": "second-password"}), want)
	ops.fail(t, http.StatusUnauthorized, http.MethodGet, admPath("/providers", p), nil)
	ops.pass = "second-password"
	ops.ok(t, http.MethodGet, admPath("/providers", p), nil)
	// The same password again changes nothing.
	admNoEvents(t, env, "the same password", func() {
		su.ok(t, http.MethodPut, "/admins/ops@acme.tv", map[string]any{"password": "second-password", "login": "ops@acme.tv"})
	})

	// An admin changes its own password; not its scope.
	ops.ok(t, http.MethodPut, "/admins/ops@acme.tv", map[string]any{"password": "third-password", "provider": p})
	ops.pass = "third-password"
	ops.fail(t, http.StatusForbidden, http.MethodPut, "/admins/ops@acme.tv", map[string]any{"provider": nil})
	ops.fail(t, http.StatusForbidden, http.MethodPut, "/admins/root", map[string]any{"password": "hijacked-password"})

	// Scope changes: to superadmin (null) and back.
	admSame(t, su.ok(t, http.MethodPut, "/admins/ops@acme.tv", map[string]any{"provider": nil}), `{"login":"ops@acme.tv","provider":null}`)
	ops.ok(t, http.MethodPost, "/providers", map[string]any{"name": "Made by ops"})
	admSame(t, su.ok(t, http.MethodPost, "/admins/ops@acme.tv", map[string]any{"provider": p}), want)
	ops.fail(t, http.StatusForbidden, http.MethodPost, "/providers", map[string]any{"name": "Not any more"})

	// Delete: the admin can no longer log in.
	admSame(t, su.ok(t, http.MethodDelete, "/admins/ops@acme.tv", nil), want)
	ops.fail(t, http.StatusUnauthorized, http.MethodGet, admPath("/providers", p), nil)
	su.fail(t, http.StatusNotFound, http.MethodGet, "/admins/ops@acme.tv", nil)
	su.fail(t, http.StatusNotFound, http.MethodDelete, "/admins/ops@acme.tv", nil)
	su.fail(t, http.StatusNotFound, http.MethodPut, "/admins/ops@acme.tv", map[string]any{"password": "whatever-pass"})
	// Its login can be taken again.
	su.ok(t, http.MethodPost, "/admins", map[string]any{"login": "ops@acme.tv", "password": "fresh-password"})
	admClient{env: env, login: "ops@acme.tv", pass: "fresh-password"}.ok(t, http.MethodPost, "/categories", map[string]any{"name": "c"})
}

func TestAdminAdminErrors(t *testing.T) {
	env := nodetest.Start(t)
	su := admSuper(env)
	p := admProvider(t, env, "Acme")
	// root is the only superadmin: it can be neither deleted nor limited.
	admNoEvents(t, env, "removing the last superadmin", func() {
		su.fail(t, 400, http.MethodDelete, "/admins/root", nil).wantField(t, "login")
		su.fail(t, 400, http.MethodPut, "/admins/root", map[string]any{"provider": p}).wantField(t, "provider")
	})
	su.ok(t, http.MethodPost, "/admins", map[string]any{"login": "taken", "password": "taken-password"})

	for _, tc := range []struct {
		name   string
		method string
		path   string
		body   any
		status int
		field  string
	}{
		{"missing login", http.MethodPost, "/admins", map[string]any{"password": "long-enough"}, 400, "login"},
		{"bad login", http.MethodPost, "/admins", map[string]any{"login": "a b", "password": "long-enough"}, 400, "login"},
		{"login too long", http.MethodPost, "/admins", map[string]any{"login": strings.Repeat("a", 65), "password": "long-enough"}, 400, "login"},
		{"missing password", http.MethodPost, "/admins", map[string]any{"login": "x"}, 400, "password"},
		{"short password", http.MethodPost, "/admins", map[string]any{"login": "x", "password": "short"}, 400, "password"},
		{"long password", http.MethodPost, "/admins", map[string]any{"login": "x", "password": strings.Repeat("p", 73)}, 400, "password"},
		{"password not a string", http.MethodPost, "/admins", map[string]any{"login": "x", "password": true}, 400, "password"},
		{"unknown provider", http.MethodPost, "/admins", map[string]any{"login": "x", "password": "long-enough", "provider": 999}, 400, "provider"},
		{"provider not an integer", http.MethodPost, "/admins", map[string]any{"login": "x", "password": "long-enough", "provider": "p"}, 400, "provider"},
		{"provider not positive", http.MethodPost, "/admins", map[string]any{"login": "x", "password": "long-enough", "provider": -1}, 400, "provider"},
		{"duplicate login", http.MethodPost, "/admins", map[string]any{"login": "taken", "password": "long-enough"}, 409, ""},
		{"login differs from path", http.MethodPut, "/admins/taken", map[string]any{"login": "other"}, 400, "login"},
		{"short new password", http.MethodPut, "/admins/taken", map[string]any{"password": "short"}, 400, "password"},
		{"unknown provider on update", http.MethodPut, "/admins/taken", map[string]any{"provider": 999}, 400, "provider"},
		{"unknown admin", http.MethodPut, "/admins/nobody", map[string]any{"password": "long-enough"}, 404, ""},
		{"unknown admin (GET)", http.MethodGet, "/admins/nobody", nil, 404, ""},
		{"unknown admin (DELETE)", http.MethodDelete, "/admins/nobody", nil, 404, ""},
		{"impossible login (DELETE)", http.MethodDelete, "/admins/a%20b", nil, 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			admNoEvents(t, env, tc.name, func() {
				e := su.fail(t, tc.status, tc.method, tc.path, tc.body)
				if tc.field != "" {
					e.wantField(t, tc.field)
				}
			})
		})
	}

	// "taken" is a superadmin too, so root may be deleted; then taken is
	// the last one.
	su.ok(t, http.MethodDelete, "/admins/root", nil)
	taken := admClient{env: env, login: "taken", pass: "taken-password"}
	taken.fail(t, 400, http.MethodDelete, "/admins/taken", nil).wantField(t, "login")
	taken.fail(t, 400, http.MethodPut, "/admins/taken", map[string]any{"provider": p}).wantField(t, "provider")
}

// admJoin returns the list's objects as text.
func admJoin(l admList) string {
	var b strings.Builder
	for _, m := range l.Data {
		for k := range m {
			b.WriteString(k)
			b.WriteByte(' ')
		}
	}
	return b.String()
}
