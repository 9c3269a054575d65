package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"

	"tvsm/internal/testkit/nodetest"
)

// What TmsTarif reads (its _dict_to_object), and our extras.
var (
	sdkTarif = sdkShape{"id": jsonInt, "tarif_name": jsonString, "provider": jsonInt, "tarif_tag": "int|null", "enabled": jsonBool}
	ourTarif = sdkShape{"id": jsonInt, "tarif_name": jsonString, "provider": jsonInt, "tarif_tag": "int|null", "enabled": jsonBool,
		"channels": jsonArray, "description": "string|null"}
	sdkTarifTag = sdkShape{"id": jsonInt, "name": jsonString, "enabled": jsonBool, "provider": jsonInt, "position": jsonInt}
)

// catalogEnv is two providers (acme, other) with an admin scoped to acme,
// two channels and a tariff tag of each provider.
type catalogEnv struct {
	env             *nodetest.Env
	super, scoped   sdkClient
	acme, other     int64
	ch1, ch2        int64
	acmeTag, ourTag int64 // acme's tag; other's tag
}

func newCatalogEnv(t *testing.T) *catalogEnv {
	t.Helper()
	env := nodetest.Start(t)
	ce := &catalogEnv{env: env, super: sdkAs(superClient(env))}
	ce.acme = mustProvider(t, env, "Acme")
	ce.other = mustProvider(t, env, "Other")
	ce.scoped = sdkAs(scopedClient(t, env, "acme-ops", ce.acme))
	ce.ch1 = mustAdmin(t, env, http.MethodPost, "/channels", map[string]any{"name": "First", "number": 1})
	ce.ch2 = mustAdmin(t, env, http.MethodPost, "/channels", map[string]any{"name": "Second", "number": 2})
	ce.acmeTag = obj(ce.super.object(t, http.MethodPost, "/tarif_tags/", map[string]any{"id": nil, "name": "Sport", "enabled": true, "provider": ce.acme, "position": nil}, sdkTarifTag)).id(t)
	ce.ourTag = obj(ce.super.object(t, http.MethodPost, "/tarif_tags/", map[string]any{"id": nil, "name": "Sport", "enabled": true, "provider": ce.other, "position": 1}, sdkTarifTag)).id(t)
	return ce
}

func TestProviderTarifsContract(t *testing.T) {
	ce := newCatalogEnv(t)
	su, scoped := ce.super, ce.scoped

	// Create as TmsTarif.create does: the whole object, id null; 200 with
	// the whole object. Our extras (channels, description) go along.
	basic := su.object(t, http.MethodPost, "/tarifs/",
		map[string]any{"id": nil, "tarif_name": "Basic", "provider": ce.acme, "tarif_tag": ce.acmeTag, "enabled": true}, ourTarif)
	if obj(basic).str(t, "tarif_name") != "Basic" || obj(basic).int(t, "tarif_tag") != ce.acmeTag || basic["enabled"] != true {
		t.Fatalf("created %v", basic)
	}
	basicID := obj(basic).id(t)
	// A provider-scoped admin's create without provider is for its own.
	premium := scoped.object(t, http.MethodPost, "/tarifs/",
		map[string]any{"id": nil, "tarif_name": "Premium", "provider": nil, "tarif_tag": nil, "enabled": false, "channels": []int64{ce.ch1, ce.ch2}}, ourTarif)
	premiumID := obj(premium).id(t)
	if obj(premium).int(t, "provider") != ce.acme || premium["tarif_tag"] != nil {
		t.Fatalf("scoped create %v", premium)
	}
	foreign := obj(su.object(t, http.MethodPost, "/tarifs/",
		map[string]any{"id": nil, "tarif_name": "Foreign", "provider": ce.other, "tarif_tag": ce.ourTag, "enabled": true}, sdkTarif)).id(t)

	// get and list: every key the SDK reads, and no redirect for the
	// trailing slash.
	sameObject(t, "GET", su.object(t, http.MethodGet, fmt.Sprintf("/tarifs/%d", basicID), nil, ourTarif), basic)
	wantIDs(t, "list", su.list(t, "/tarifs/?start=0&limit=50", ourTarif), basicID, premiumID, foreign)
	wantIDs(t, "page", su.list(t, "/tarifs/?start=1&limit=1", sdkTarif), premiumID)
	wantIDs(t, "sorted", su.list(t, "/tarifs/?start=0&limit=50&sort=-tarif_name", sdkTarif), premiumID, foreign, basicID)

	// Every filter of TmsTarif.get_list narrows the list.
	const all = "/tarifs/?start=0&limit=50"
	su.narrows(t, all, fmt.Sprintf("channel=%d", ce.ch2), sdkTarif, premiumID)
	su.narrows(t, all, "enabled=False", sdkTarif, premiumID)
	su.narrows(t, all, "enabled=True", sdkTarif, basicID, foreign)
	su.narrows(t, all, fmt.Sprintf("provider=%d", ce.other), sdkTarif, foreign)
	su.narrows(t, all, fmt.Sprintf("tarif_tag=%d", ce.acmeTag), sdkTarif, basicID)
	su.narrows(t, all, "quick_search=PREM", sdkTarif, premiumID)
	su.unknownFilter(t, "/tarifs/")
	su.fails(t, http.StatusBadRequest, http.MethodGet, all+"&enabled=maybe", nil).field(t, "enabled")
	su.fails(t, http.StatusBadRequest, http.MethodGet, all+"&tarif_tag=x", nil).field(t, "tarif_tag")

	// Update as TmsTarif.update does: PUT /tarifs/{id} with the whole
	// object. Re-sending it as read appends nothing.
	path := fmt.Sprintf("/tarifs/%d", basicID)
	before := head(t, ce.env)
	sameObject(t, "re-send", su.object(t, http.MethodPut, path,
		map[string]any{"id": basicID, "tarif_name": "Basic", "provider": ce.acme, "tarif_tag": ce.acmeTag, "enabled": true}, ourTarif), basic)
	su.ok(t, http.MethodPut, path, basic)
	if after := head(t, ce.env); after != before {
		t.Fatalf("a re-send appended: %v → %v", before, after)
	}
	u := su.object(t, http.MethodPut, path, map[string]any{"id": basicID, "tarif_name": "Basic+", "provider": ce.acme, "tarif_tag": nil, "enabled": true}, ourTarif)
	if u["tarif_name"] != "Basic+" || u["tarif_tag"] != nil {
		t.Fatalf("updated %v", u)
	}
	// POST with id is a partial update too.
	u = su.object(t, http.MethodPost, "/tarifs/", map[string]any{"id": basicID, "tarif_tag": ce.acmeTag}, ourTarif)
	if obj(u).int(t, "tarif_tag") != ce.acmeTag || u["tarif_name"] != "Basic+" {
		t.Fatalf("POST with id %v", u)
	}

	// Bad input names the Provider API's field.
	su.fails(t, http.StatusBadRequest, http.MethodPost, "/tarifs/", map[string]any{"id": nil, "tarif_name": nil, "provider": ce.acme, "enabled": true}).field(t, "tarif_name")
	su.fails(t, http.StatusBadRequest, http.MethodPost, "/tarifs/", map[string]any{"tarif_name": "X", "enabled": true}).field(t, "provider")
	su.fails(t, http.StatusBadRequest, http.MethodPost, "/tarifs/", map[string]any{"tarif_name": "X", "provider": ce.acme, "tarif_tag": ce.ourTag}).field(t, "tarif_tag")
	su.fails(t, http.StatusBadRequest, http.MethodPut, path, map[string]any{"tarif_tag": "sport"}).field(t, "tarif_tag")
	su.fails(t, http.StatusBadRequest, http.MethodPut, path, map[string]any{"tarif_tag": 999}).field(t, "tarif_tag")
	su.fails(t, http.StatusBadRequest, http.MethodPut, path, map[string]any{"tarif_name": ""}).field(t, "tarif_name")
	su.fails(t, http.StatusBadRequest, http.MethodPut, path, map[string]any{"provider": ce.other}).field(t, "provider")
	su.fails(t, http.StatusBadRequest, http.MethodPut, path, map[string]any{"id": basicID + 1, "tarif_name": "X"}).field(t, "id")

	// Scope: another provider's tariff is refused and never listed.
	foreignPath := fmt.Sprintf("/tarifs/%d", foreign)
	wantIDs(t, "scoped list", scoped.list(t, all, sdkTarif), basicID, premiumID)
	wantIDs(t, "scoped list of the other provider", scoped.list(t, fmt.Sprintf("%s&provider=%d", all, ce.other), sdkTarif))
	scoped.fails(t, http.StatusForbidden, http.MethodGet, foreignPath, nil)
	scoped.fails(t, http.StatusForbidden, http.MethodPut, foreignPath, map[string]any{"tarif_name": "Mine"})
	scoped.fails(t, http.StatusForbidden, http.MethodDelete, foreignPath, nil)
	scoped.fails(t, http.StatusForbidden, http.MethodPost, "/tarifs/", map[string]any{"tarif_name": "X", "provider": ce.other})
	if u := scoped.object(t, http.MethodPut, path, map[string]any{"enabled": false}, sdkTarif); u["enabled"] != false {
		t.Fatalf("scoped update %v", u)
	}

	// Delete answers 200 with the tariff as it was; then it is gone.
	if d := obj(su.object(t, http.MethodDelete, fmt.Sprintf("/tarifs/%d", premiumID), nil, ourTarif)); d.id(t) != premiumID {
		t.Fatalf("delete answered %v", d)
	}
	su.fails(t, http.StatusNotFound, http.MethodGet, fmt.Sprintf("/tarifs/%d", premiumID), nil)
	su.fails(t, http.StatusNotFound, http.MethodPut, fmt.Sprintf("/tarifs/%d", premiumID), map[string]any{"enabled": true})
	wantIDs(t, "after delete", su.list(t, all, sdkTarif), basicID, foreign)

	// The Admin API shows the same tariff with the tag under its own name.
	status, body := ce.env.Super(t, http.MethodGet, fmt.Sprintf("/api/admin/tariffs/%d", basicID), nil)
	if a := decodeObj(t, body); status != http.StatusOK || a.int(t, "tarif_tag") != ce.acmeTag || a.str(t, "name") != "Basic+" {
		t.Fatalf("admin view: %d %s", status, body)
	}
}

// TestProviderTarifIdempotency checks that a create with an
// Idempotency-Key happens once, that the key is the route's (the Admin
// API's tariffs are another route), and that a scoped admin's create
// without provider is the same request as one naming its provider.
func TestProviderTarifIdempotency(t *testing.T) {
	env := nodetest.Start(t)
	acme := mustProvider(t, env, "Acme")
	ops := scopedClient(t, env, "acme-ops", acme)
	key := http.Header{"Idempotency-Key": {"sync-1"}}
	create := func(c papi, body map[string]any) int64 {
		t.Helper()
		status, data := c.doHeader(t, http.MethodPost, "/tarifs/", body, key)
		if status != http.StatusOK {
			t.Fatalf("create: %d %s", status, data)
		}
		return decodeObj(t, data).id(t)
	}
	first := create(ops, map[string]any{"tarif_name": "Basic", "provider": nil, "enabled": true})
	if again := create(ops, map[string]any{"tarif_name": "Basic", "provider": acme, "enabled": true}); again != first {
		t.Fatalf("retry created %d, first %d", again, first)
	}
	status, data := ops.env.DoHeader(t, http.MethodPost, "/api/admin/tariffs", ops.login, ops.pass, map[string]any{"name": "Basic", "provider": acme}, key)
	if status != http.StatusOK || decodeObj(t, data).id(t) == first {
		t.Fatalf("the Admin API's create with the same key: %d %s", status, data)
	}
	if status, data := ops.doHeader(t, http.MethodPost, "/tarifs/", map[string]any{"tarif_name": "Other"}, key); status != http.StatusUnprocessableEntity {
		t.Fatalf("same key, other body: %d %s", status, data)
	}
	if l := superClient(env).ok(t, http.MethodGet, "/tarifs/?start=0&limit=50", nil); l.int(t, "total") != 2 {
		t.Fatalf("tariffs %v", l)
	}
}
