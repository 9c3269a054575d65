package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func TestProviderTarifTagsContract(t *testing.T) {
	ce := newCatalogEnv(t)
	su, scoped := ce.super, ce.scoped

	// Create as TmsTarifTag.create does (position None when not given):
	// enabled as sent, position 0.
	kids := scoped.object(t, http.MethodPost, "/tarif_tags/",
		map[string]any{"enabled": false, "name": "Kids", "provider": ce.acme, "id": nil, "position": nil}, sdkTarifTag)
	kidsID := obj(kids).id(t)
	if kids["enabled"] != false || obj(kids).int(t, "position") != 0 || obj(kids).int(t, "provider") != ce.acme {
		t.Fatalf("created %v", kids)
	}
	// A scoped admin's tag without provider is its own provider's.
	movies := obj(scoped.object(t, http.MethodPost, "/tarif_tags/", map[string]any{"enabled": true, "name": "Movies", "provider": nil, "position": 5}, sdkTarifTag))
	if movies.int(t, "provider") != ce.acme || movies.int(t, "position") != 5 {
		t.Fatalf("scoped create %v", movies)
	}

	const all = "/tarif_tags/?start=0&limit=50"
	wantIDs(t, "list", su.list(t, all, sdkTarifTag), ce.acmeTag, ce.ourTag, kidsID, movies.id(t))
	sameObject(t, "GET", su.object(t, http.MethodGet, fmt.Sprintf("/tarif_tags/%d", kidsID), nil, sdkTarifTag), kids)
	wantIDs(t, "by position", su.list(t, all+"&sort=position,-id", sdkTarifTag), kidsID, ce.acmeTag, ce.ourTag, movies.id(t))

	// Every filter of TmsTarifTag.get_list narrows the list.
	su.narrows(t, all, "enabled=False", sdkTarifTag, kidsID)
	su.narrows(t, all, fmt.Sprintf("provider=%d", ce.other), sdkTarifTag, ce.ourTag)
	su.narrows(t, all, "quick_search=sPoRt", sdkTarifTag, ce.acmeTag, ce.ourTag)
	su.unknownFilter(t, "/tarif_tags/")

	// Update: a re-send of the object as read appends nothing; PUT and
	// POST-with-id change what differs.
	path := fmt.Sprintf("/tarif_tags/%d", kidsID)
	before := head(t, ce.env)
	su.ok(t, http.MethodPut, path, kids)
	if after := head(t, ce.env); after != before {
		t.Fatalf("a re-send appended: %v → %v", before, after)
	}
	u := su.object(t, http.MethodPut, path, map[string]any{"enabled": true, "name": "Children", "provider": ce.acme, "id": kidsID, "position": 3}, sdkTarifTag)
	if u["name"] != "Children" || u["enabled"] != true || obj(u).int(t, "position") != 3 {
		t.Fatalf("updated %v", u)
	}
	if u := su.object(t, http.MethodPost, "/tarif_tags/", map[string]any{"id": kidsID, "position": 0}, sdkTarifTag); obj(u).int(t, "position") != 0 || u["name"] != "Children" {
		t.Fatalf("POST with id %v", u)
	}
	su.fails(t, http.StatusBadRequest, http.MethodPut, path, map[string]any{"position": -1}).field(t, "position")
	su.fails(t, http.StatusBadRequest, http.MethodPut, path, map[string]any{"name": " padded"}).field(t, "name")
	su.fails(t, http.StatusBadRequest, http.MethodPut, path, map[string]any{"provider": ce.other}).field(t, "provider")
	su.fails(t, http.StatusBadRequest, http.MethodPost, "/tarif_tags/", map[string]any{"name": "X", "enabled": true}).field(t, "provider")
	su.fails(t, http.StatusBadRequest, http.MethodPost, "/tarif_tags/", map[string]any{"name": "X", "provider": 999}).field(t, "provider")
	su.fails(t, http.StatusBadRequest, http.MethodPost, "/tarif_tags/", map[string]any{"provider": ce.acme, "enabled": "yes"}).field(t, "enabled")

	// Scope: another provider's tags are refused and never listed.
	wantIDs(t, "scoped list", scoped.list(t, all, sdkTarifTag), ce.acmeTag, kidsID, movies.id(t))
	wantIDs(t, "scoped list of the other provider", scoped.list(t, fmt.Sprintf("%s&provider=%d", all, ce.other), sdkTarifTag))
	foreign := fmt.Sprintf("/tarif_tags/%d", ce.ourTag)
	scoped.fails(t, http.StatusForbidden, http.MethodGet, foreign, nil)
	scoped.fails(t, http.StatusForbidden, http.MethodPut, foreign, map[string]any{"name": "Mine"})
	scoped.fails(t, http.StatusForbidden, http.MethodDelete, foreign, nil)
	scoped.fails(t, http.StatusForbidden, http.MethodPost, "/tarif_tags/", map[string]any{"name": "X", "provider": ce.other})

	// A tag that tariffs name is not deleted: 409 naming them. Once they
	// are untagged, it is.
	t1 := obj(su.object(t, http.MethodPost, "/tarifs/", map[string]any{"tarif_name": "A", "provider": ce.acme, "tarif_tag": kidsID, "enabled": true}, sdkTarif)).id(t)
	t2 := obj(su.object(t, http.MethodPost, "/tarifs/", map[string]any{"tarif_name": "B", "provider": ce.acme, "tarif_tag": kidsID, "enabled": true}, sdkTarif)).id(t)
	before = head(t, ce.env)
	e := su.fails(t, http.StatusConflict, http.MethodDelete, path, nil)
	if want := fmt.Sprintf("in use by tariffs %d, %d", t1, t2); !strings.Contains(e.Cause, want) {
		t.Errorf("cause %q does not say %q", e.Cause, want)
	}
	if after := head(t, ce.env); after != before {
		t.Fatalf("a refused delete appended: %v → %v", before, after)
	}
	su.ok(t, http.MethodPut, fmt.Sprintf("/tarifs/%d", t1), map[string]any{"tarif_tag": nil})
	su.ok(t, http.MethodDelete, fmt.Sprintf("/tarifs/%d", t2), nil)
	if d := obj(su.object(t, http.MethodDelete, path, nil, sdkTarifTag)); d.id(t) != kidsID {
		t.Fatalf("delete answered %v", d)
	}
	su.fails(t, http.StatusNotFound, http.MethodGet, path, nil)
	su.fails(t, http.StatusNotFound, http.MethodDelete, path, nil)
	// A deleted tag cannot be given to a tariff.
	su.fails(t, http.StatusBadRequest, http.MethodPut, fmt.Sprintf("/tarifs/%d", t1), map[string]any{"tarif_tag": kidsID}).field(t, "tarif_tag")
}
