package httpapi_test

import (
	"net/http"
	"slices"
	"testing"

	"tvsm/internal/testkit/nodetest"
)

// TestAdminScope checks what a provider-scoped admin may do: read its own
// provider, the channel and category catalog, and its own provider's
// admins; manage its own provider's tariffs; nothing else.
func TestAdminScope(t *testing.T) {
	env := nodetest.Start(t)
	su := admSuper(env)
	mine := admProvider(t, env, "Mine")
	theirs := admProvider(t, env, "Theirs")
	ch := admID(t, su.ok(t, http.MethodPost, "/channels", map[string]any{"name": "One"}))
	cat := admID(t, su.ok(t, http.MethodPost, "/categories", map[string]any{"name": "News"}))
	theirTariff := admID(t, su.ok(t, http.MethodPost, "/tariffs", map[string]any{"provider": theirs, "name": "Theirs"}))
	su.ok(t, http.MethodPost, "/admins", map[string]any{"login": "their-ops", "password": "their-password", "provider": theirs})
	ops := admScoped(t, env, "ops", mine)
	admScoped(t, env, "colleague", mine)

	t.Run("providers", func(t *testing.T) {
		ops.ok(t, http.MethodGet, admPath("/providers", mine), nil)
		ops.fail(t, http.StatusForbidden, http.MethodGet, admPath("/providers", theirs), nil)
		ops.fail(t, http.StatusForbidden, http.MethodGet, "/providers/4242", nil) // existing or not
		if l := ops.list(t, "/providers"); l.Total != 1 || !slices.Equal(l.ids(t), []int64{mine}) {
			t.Fatalf("scoped provider list: %+v", l)
		}
		admNoEvents(t, env, "scoped provider writes", func() {
			ops.fail(t, http.StatusForbidden, http.MethodPost, "/providers", map[string]any{"name": "New"})
			ops.fail(t, http.StatusForbidden, http.MethodPut, admPath("/providers", mine), map[string]any{"name": "Renamed"})
			ops.fail(t, http.StatusForbidden, http.MethodPost, "/providers", map[string]any{"id": theirs, "name": "Renamed"})
			ops.fail(t, http.StatusForbidden, http.MethodDelete, admPath("/providers", mine), nil)
		})
	})

	t.Run("catalog", func(t *testing.T) {
		ops.ok(t, http.MethodGet, admPath("/channels", ch), nil)
		ops.ok(t, http.MethodGet, admPath("/categories", cat), nil)
		if l := ops.list(t, "/channels"); l.Total != 1 {
			t.Fatalf("channels: %+v", l)
		}
		if l := ops.list(t, "/categories"); l.Total != 1 {
			t.Fatalf("categories: %+v", l)
		}
		admNoEvents(t, env, "scoped catalog writes", func() {
			ops.fail(t, http.StatusForbidden, http.MethodPost, "/channels", map[string]any{"name": "Two"})
			ops.fail(t, http.StatusForbidden, http.MethodPut, admPath("/channels", ch), map[string]any{"name": "Uno"})
			ops.fail(t, http.StatusForbidden, http.MethodDelete, admPath("/channels", ch), nil)
			ops.fail(t, http.StatusForbidden, http.MethodPost, "/categories", map[string]any{"name": "Sport"})
			ops.fail(t, http.StatusForbidden, http.MethodPut, admPath("/categories", cat), map[string]any{"name": "Sport"})
			ops.fail(t, http.StatusForbidden, http.MethodDelete, admPath("/categories", cat), nil)
		})
	})

	t.Run("tariffs", func(t *testing.T) {
		// Without a provider, a scoped admin's tariff is its provider's.
		created := ops.ok(t, http.MethodPost, "/tariffs", map[string]any{"name": "Own", "channels": []int64{ch}})
		own := admID(t, created)
		if created["provider"] != float64(mine) {
			t.Fatalf("scoped tariff created for provider %v, want %d", created["provider"], mine)
		}
		ops.ok(t, http.MethodPost, "/tariffs", map[string]any{"provider": mine, "name": "Own 2"})
		ops.ok(t, http.MethodPut, admPath("/tariffs", own), map[string]any{"name": "Own renamed"})
		ops.ok(t, http.MethodGet, admPath("/tariffs", own), nil)
		if l := ops.list(t, "/tariffs"); l.Total != 2 {
			t.Fatalf("scoped tariff list: %+v", l)
		}
		if l := ops.list(t, "/tariffs?provider="+admItoa(theirs)); l.Total != 0 {
			t.Fatalf("scoped tariff list filtered on another provider: %+v", l)
		}
		if l := su.list(t, "/tariffs"); l.Total != 3 {
			t.Fatalf("superadmin tariff list: %+v", l)
		}
		admNoEvents(t, env, "scoped writes on another provider's tariffs", func() {
			ops.fail(t, http.StatusForbidden, http.MethodPost, "/tariffs", map[string]any{"provider": theirs, "name": "Sneaky"})
			ops.fail(t, http.StatusForbidden, http.MethodGet, admPath("/tariffs", theirTariff), nil)
			ops.fail(t, http.StatusForbidden, http.MethodPut, admPath("/tariffs", theirTariff), map[string]any{"name": "Mine now"})
			ops.fail(t, http.StatusForbidden, http.MethodPost, "/tariffs", map[string]any{"id": theirTariff, "enabled": false})
			ops.fail(t, http.StatusForbidden, http.MethodPut, admPath("/tariffs", theirTariff), map[string]any{"channels": []int64{999}})
			ops.fail(t, http.StatusForbidden, http.MethodDelete, admPath("/tariffs", theirTariff), nil)
			// Moving an own tariff to another provider is a 400 (provider
			// cannot change).
			ops.fail(t, http.StatusBadRequest, http.MethodPut, admPath("/tariffs", own), map[string]any{"provider": theirs}).wantField(t, "provider")
		})
		ops.ok(t, http.MethodDelete, admPath("/tariffs", own), nil)
	})

	t.Run("admins", func(t *testing.T) {
		l := ops.list(t, "/admins")
		var logins []string
		for _, m := range l.Data {
			logins = append(logins, m["login"].(string))
		}
		if !slices.Equal(logins, []string{"colleague", "ops"}) || l.Total != 2 {
			t.Fatalf("scoped admin list: %v (total %d)", logins, l.Total)
		}
		ops.ok(t, http.MethodGet, "/admins/colleague", nil)
		ops.ok(t, http.MethodGet, "/admins/ops", nil)
		ops.fail(t, http.StatusForbidden, http.MethodGet, "/admins/root", nil)
		ops.fail(t, http.StatusForbidden, http.MethodGet, "/admins/their-ops", nil)
		admNoEvents(t, env, "scoped admin writes", func() {
			ops.fail(t, http.StatusForbidden, http.MethodPost, "/admins", map[string]any{"login": "new", "password": "new-password", "provider": mine})
			ops.fail(t, http.StatusForbidden, http.MethodPut, "/admins/colleague", map[string]any{"password": "changed-password"})
			ops.fail(t, http.StatusForbidden, http.MethodDelete, "/admins/colleague", nil)
			ops.fail(t, http.StatusForbidden, http.MethodPut, "/admins/ops", map[string]any{"provider": theirs})
		})
	})
}
