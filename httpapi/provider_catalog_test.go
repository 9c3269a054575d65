package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"tvsm/internal/testkit/nodetest"
)

// What the SDK's read-only catalog classes read (their _dict_to_object).
var (
	sdkProvider = sdkShape{"id": jsonInt, "region_tag": "int|null", "provider_name": jsonString, "provider_comment": "string|null",
		"enabled": jsonBool, "logo_url": "string|null", "devices_per_account_limit": "int|null"}
	sdkChannel = sdkShape{"id": jsonInt, "name": jsonString, "text_name": jsonString, "display_number": jsonString,
		"logo_url": "string|null", "enabled": jsonBool, "time_shift_depth": "int|null", "favorites": jsonArray}
	sdkFavoriteGroup = sdkShape{"id": jsonInt, "name": jsonString}
	ourFavoriteGroup = sdkShape{"id": jsonInt, "name": jsonString, "channels": jsonArray}
	sdkRegion        = sdkShape{"id": jsonInt, "name": jsonString}
	sdkDeviceType    = sdkShape{"id": jsonInt, "device_type": jsonString}
)

func TestProviderProvidersContract(t *testing.T) {
	env := nodetest.Start(t)
	su := sdkAs(superClient(env))
	north := mustAdmin(t, env, http.MethodPost, "/regions", map[string]any{"name": "North"})
	acme := mustAdmin(t, env, http.MethodPost, "/providers", map[string]any{"name": "Acme TV", "region_tag": north,
		"comment": "Main\nprovider", "logo_url": "https://cdn.example/acme.png", "devices_per_account_limit": 3})
	other := mustAdmin(t, env, http.MethodPost, "/providers", map[string]any{"name": "Other", "enabled": false})
	scoped := sdkAs(scopedClient(t, env, "acme-ops", acme))

	p := obj(su.object(t, http.MethodGet, fmt.Sprintf("/providers/%d", acme), nil, sdkProvider))
	if p.int(t, "region_tag") != north || p.str(t, "provider_name") != "Acme TV" || p.str(t, "provider_comment") != "Main\nprovider" ||
		p.str(t, "logo_url") != "https://cdn.example/acme.png" || p.int(t, "devices_per_account_limit") != 3 || p["enabled"] != true {
		t.Fatalf("provider %v", p)
	}
	o := su.object(t, http.MethodGet, fmt.Sprintf("/providers/%d", other), nil, sdkProvider)
	for _, k := range []string{"region_tag", "provider_comment", "logo_url", "devices_per_account_limit"} {
		if o[k] != nil {
			t.Errorf("unset %s = %v, want null", k, o[k])
		}
	}
	if _, ok := o["billing"]; ok {
		t.Errorf("the Provider API shows billing settings: %v", o)
	}

	const all = "/providers/?start=0&limit=50"
	wantIDs(t, "list", su.list(t, all, sdkProvider), acme, other)
	wantIDs(t, "sorted", su.list(t, all+"&sort=-provider_name", sdkProvider), other, acme)
	su.narrows(t, all, "enabled=False", sdkProvider, other)
	su.narrows(t, all, "enabled=True", sdkProvider, acme)
	su.narrows(t, all, "quick_search=acme", sdkProvider, acme)
	su.unknownFilter(t, "/providers/")

	// A provider-scoped admin sees its own provider only.
	wantIDs(t, "scoped list", scoped.list(t, all, sdkProvider), acme)
	wantIDs(t, "scoped search", scoped.list(t, all+"&quick_search=other", sdkProvider))
	scoped.object(t, http.MethodGet, fmt.Sprintf("/providers/%d", acme), nil, sdkProvider)
	scoped.fails(t, http.StatusForbidden, http.MethodGet, fmt.Sprintf("/providers/%d", other), nil)

	// Read only: providers are written through the Admin API.
	before := head(t, env)
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		if status, body := su.do(t, m, fmt.Sprintf("/providers/%d", acme), map[string]any{"provider_name": "X"}); status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
			t.Errorf("%s a provider: %d %s", m, status, body)
		}
	}
	if status, _ := su.do(t, http.MethodPost, "/providers/", map[string]any{"provider_name": "X"}); status == http.StatusOK {
		t.Error("POST /providers/ created something")
	}
	if after := head(t, env); after != before {
		t.Fatalf("a write to the read-only providers appended: %v → %v", before, after)
	}

	// The Admin API writes the new keys: null clears, the region must
	// exist, bad values name the key.
	status, body := env.Super(t, http.MethodPut, fmt.Sprintf("/api/admin/providers/%d", acme), map[string]any{"region_tag": nil, "comment": nil, "logo_url": ""})
	if a := decodeObj(t, body); status != http.StatusOK || a["region_tag"] != nil || a["comment"] != nil || a["logo_url"] != nil || a.str(t, "name") != "Acme TV" {
		t.Fatalf("clear: %d %s", status, body)
	}
	adm := admSuper(env)
	adm.fail(t, http.StatusBadRequest, http.MethodPut, fmt.Sprintf("/providers/%d", acme), map[string]any{"region_tag": 999}).wantField(t, "region_tag")
	adm.fail(t, http.StatusBadRequest, http.MethodPut, fmt.Sprintf("/providers/%d", acme), map[string]any{"region_tag": "north"}).wantField(t, "region_tag")
	adm.fail(t, http.StatusBadRequest, http.MethodPost, "/providers", map[string]any{"name": "X", "region_tag": 999}).wantField(t, "region_tag")
	adm.fail(t, http.StatusBadRequest, http.MethodPost, "/providers", map[string]any{"name": "X", "logo_url": "logo.png"}).wantField(t, "logo_url")
	adm.fail(t, http.StatusBadRequest, http.MethodPost, "/providers", map[string]any{"name": "X", "comment": strings.Repeat("c", 1001)}).wantField(t, "comment")
}

func TestProviderChannelsContract(t *testing.T) {
	ce := newCatalogEnv(t)
	env, su, scoped := ce.env, ce.super, ce.scoped
	news := mustAdmin(t, env, http.MethodPost, "/categories", map[string]any{"name": "News"})
	gone := mustAdmin(t, env, http.MethodPost, "/categories", map[string]any{"name": "Gone"})
	hd := mustAdmin(t, env, http.MethodPost, "/channels", map[string]any{"name": "News 24", "number": 24, "text_name": "News 24 HD",
		"logo_url": "https://cdn.example/24.png", "categories": []int64{news, gone}, "time_shift_depth": 72, "enabled": false})
	mustAdmin(t, env, http.MethodDelete, fmt.Sprintf("/categories/%d", gone), nil)
	acmeTariff := obj(su.object(t, http.MethodPost, "/tarifs/", map[string]any{"tarif_name": "Basic", "provider": ce.acme, "channels": []int64{ce.ch1, hd}}, sdkTarif)).id(t)
	otherTariff := obj(su.object(t, http.MethodPost, "/tarifs/", map[string]any{"tarif_name": "Other", "provider": ce.other, "channels": []int64{ce.ch2}}, sdkTarif)).id(t)

	c := obj(su.object(t, http.MethodGet, fmt.Sprintf("/channels/%d", hd), nil, sdkChannel))
	if c.str(t, "name") != "News 24" || c.str(t, "text_name") != "News 24 HD" || c.str(t, "display_number") != "24" ||
		c.str(t, "logo_url") != "https://cdn.example/24.png" || c["enabled"] != false || c.int(t, "time_shift_depth") != 72 {
		t.Fatalf("channel %v", c)
	}
	// favorites: the categories that still exist, as favorite_group ids.
	if fav, _ := c["favorites"].([]any); len(fav) != 1 || obj(map[string]any{"id": fav[0]}).id(t) != news {
		t.Errorf("favorites %v, want [%d]", c["favorites"], news)
	}
	// Without a text name of its own, text_name is the name; unset
	// optional keys are null; new channels are enabled.
	first := su.object(t, http.MethodGet, fmt.Sprintf("/channels/%d", ce.ch1), nil, sdkChannel)
	if first["text_name"] != "First" || first["display_number"] != "1" || first["logo_url"] != nil || first["time_shift_depth"] != nil || first["enabled"] != true {
		t.Errorf("plain channel %v", first)
	}

	const all = "/channels/?start=0&limit=50"
	wantIDs(t, "list", su.list(t, all, sdkChannel), ce.ch1, ce.ch2, hd)
	wantIDs(t, "by display_number desc", su.list(t, all+"&sort=-display_number", sdkChannel), hd, ce.ch2, ce.ch1)
	su.narrows(t, all, fmt.Sprintf("tarif=%d", acmeTariff), sdkChannel, ce.ch1, hd)
	su.narrows(t, all, "enabled=False", sdkChannel, hd)
	su.narrows(t, all, "quick_search=hd", sdkChannel, hd) // the text name
	su.narrows(t, all, "quick_search=sec", sdkChannel, ce.ch2)
	su.unknownFilter(t, "/channels/")
	su.fails(t, http.StatusBadRequest, http.MethodGet, all+"&tarif=basic", nil).field(t, "tarif")

	// Every admin reads channels; the tarif filter takes only tariffs the
	// admin may see.
	wantIDs(t, "scoped list", scoped.list(t, all, sdkChannel), ce.ch1, ce.ch2, hd)
	scoped.object(t, http.MethodGet, fmt.Sprintf("/channels/%d", hd), nil, sdkChannel)
	wantIDs(t, "scoped, own tariff", scoped.list(t, fmt.Sprintf("%s&tarif=%d", all, acmeTariff), sdkChannel), ce.ch1, hd)
	wantIDs(t, "scoped, another provider's tariff", scoped.list(t, fmt.Sprintf("%s&tarif=%d", all, otherTariff), sdkChannel))
	wantIDs(t, "unknown tariff", su.list(t, all+"&tarif=999", sdkChannel))

	// Read only here; the Admin API writes the new fields.
	if status, _ := su.do(t, http.MethodPost, "/channels/", map[string]any{"name": "X"}); status == http.StatusOK {
		t.Error("POST /channels/ created something")
	}
	adm := admSuper(env)
	u := adm.ok(t, http.MethodPut, fmt.Sprintf("/channels/%d", hd), map[string]any{"text_name": nil, "enabled": true, "time_shift_depth": nil})
	if u["text_name"] != nil || u["enabled"] != true || u["time_shift_depth"] != nil {
		t.Fatalf("admin update %v", u)
	}
	if c := su.object(t, http.MethodGet, fmt.Sprintf("/channels/%d", hd), nil, sdkChannel); c["text_name"] != "News 24" {
		t.Errorf("text_name after clearing: %v", c["text_name"])
	}
	adm.fail(t, http.StatusBadRequest, http.MethodPut, fmt.Sprintf("/channels/%d", hd), map[string]any{"time_shift_depth": -1}).wantField(t, "time_shift_depth")
	adm.fail(t, http.StatusBadRequest, http.MethodPut, fmt.Sprintf("/channels/%d", hd), map[string]any{"enabled": "sometimes"}).wantField(t, "enabled")
	adm.fail(t, http.StatusBadRequest, http.MethodPost, "/channels", map[string]any{"name": "X", "text_name": " X"}).wantField(t, "text_name")
}

func TestProviderFavoriteGroupsContract(t *testing.T) {
	env := nodetest.Start(t)
	su := sdkAs(superClient(env))
	acme := mustProvider(t, env, "Acme")
	scoped := sdkAs(scopedClient(t, env, "acme-ops", acme))
	news := mustAdmin(t, env, http.MethodPost, "/categories", map[string]any{"name": "News"})
	sport := mustAdmin(t, env, http.MethodPost, "/categories", map[string]any{"name": "Sport"})
	ch1 := mustAdmin(t, env, http.MethodPost, "/channels", map[string]any{"name": "One", "categories": []int64{sport, news}})
	ch2 := mustAdmin(t, env, http.MethodPost, "/channels", map[string]any{"name": "Two", "categories": []int64{news}})

	g := obj(su.object(t, http.MethodGet, fmt.Sprintf("/favorite_group/%d", news), nil, ourFavoriteGroup))
	if g.str(t, "name") != "News" || fmt.Sprint(g["channels"]) != fmt.Sprint([]any{jsonNum(ch1), jsonNum(ch2)}) {
		t.Fatalf("group %v", g)
	}
	const all = "/favorite_group/?start=0&limit=50"
	wantIDs(t, "list", su.list(t, all, ourFavoriteGroup), news, sport)
	wantIDs(t, "sorted", su.list(t, all+"&sort=-name", sdkFavoriteGroup), sport, news)
	su.narrows(t, all, "quick_search=SPO", sdkFavoriteGroup, sport)
	su.unknownFilter(t, "/favorite_group/")
	// Every admin reads them; they are read only.
	wantIDs(t, "scoped list", scoped.list(t, all, sdkFavoriteGroup), news, sport)
	if status, _ := su.do(t, http.MethodPost, "/favorite_group/", map[string]any{"name": "X"}); status == http.StatusOK {
		t.Error("POST /favorite_group/ created something")
	}
	// The same ids as the channels' favorites.
	c := su.object(t, http.MethodGet, fmt.Sprintf("/channels/%d", ch1), nil, sdkChannel)
	if fmt.Sprint(c["favorites"]) != fmt.Sprint([]any{jsonNum(sport), jsonNum(news)}) {
		t.Errorf("favorites %v", c["favorites"])
	}
	su.fails(t, http.StatusNotFound, http.MethodGet, "/favorite_group/999", nil)
}

func TestProviderRegionsContract(t *testing.T) {
	env := nodetest.Start(t)
	su := sdkAs(superClient(env))
	adm := admSuper(env)
	north := admID(t, adm.ok(t, http.MethodPost, "/regions", map[string]any{"name": "North-West"}))
	south := admID(t, adm.ok(t, http.MethodPost, "/regions", map[string]any{"name": "South"}))
	acme := mustAdmin(t, env, http.MethodPost, "/providers", map[string]any{"name": "Acme", "region_tag": north})
	scoped := sdkAs(scopedClient(t, env, "acme-ops", acme))

	sameObject(t, "GET", su.object(t, http.MethodGet, fmt.Sprintf("/regions/%d", north), nil, sdkRegion),
		map[string]any{"id": jsonNum(north), "name": "North-West"})
	const all = "/regions/?start=0&limit=50"
	wantIDs(t, "list", su.list(t, all, sdkRegion), north, south)
	wantIDs(t, "sorted", su.list(t, all+"&sort=-name", sdkRegion), south, north)
	su.narrows(t, all, "quick_search=west", sdkRegion, north)
	su.unknownFilter(t, "/regions/")
	wantIDs(t, "scoped list", scoped.list(t, all, sdkRegion), north, south)
	scoped.object(t, http.MethodGet, fmt.Sprintf("/regions/%d", south), nil, sdkRegion)
	if status, _ := su.do(t, http.MethodPost, "/regions/", map[string]any{"name": "X"}); status == http.StatusOK {
		t.Error("POST /api/provider/regions/ created something")
	}

	// The Admin API writes them, superadmins only.
	admSame(t, adm.ok(t, http.MethodPut, admPath("/regions", south), map[string]any{"name": "Far South"}), `{"id":`+admItoa(south)+`,"name":"Far South"}`)
	admSame(t, adm.ok(t, http.MethodPost, "/regions", map[string]any{"id": south, "name": "South"}), `{"id":`+admItoa(south)+`,"name":"South"}`)
	if l := adm.list(t, "/regions?quick_search=sou"); !slices.Equal(l.ids(t), []int64{south}) {
		t.Errorf("admin search %v", l.ids(t))
	}
	adm.fail(t, http.StatusBadRequest, http.MethodPost, "/regions", map[string]any{"name": ""}).wantField(t, "name")
	ops := admScoped(t, env, "ops", acme)
	ops.fail(t, http.StatusForbidden, http.MethodPost, "/regions", map[string]any{"name": "Mine"})
	ops.fail(t, http.StatusForbidden, http.MethodPut, admPath("/regions", south), map[string]any{"name": "Mine"})
	ops.fail(t, http.StatusForbidden, http.MethodDelete, admPath("/regions", south), nil)

	// A region that providers name is not deleted: 409 naming them.
	e := adm.fail(t, http.StatusConflict, http.MethodDelete, admPath("/regions", north), nil)
	if want := fmt.Sprintf("in use by provider %d", acme); !strings.Contains(e.Cause, want) {
		t.Errorf("cause %q does not say %q", e.Cause, want)
	}
	admSame(t, adm.ok(t, http.MethodDelete, admPath("/regions", south), nil), `{"id":`+admItoa(south)+`,"name":"South"}`)
	su.fails(t, http.StatusNotFound, http.MethodGet, fmt.Sprintf("/regions/%d", south), nil)
	wantIDs(t, "after delete", su.list(t, all, sdkRegion), north)
}

func TestProviderDeviceTypesContract(t *testing.T) {
	env := nodetest.Start(t)
	su := sdkAs(superClient(env))
	acme := mustProvider(t, env, "Acme")
	scoped := sdkAs(scopedClient(t, env, "acme-ops", acme))

	// TmsDeviceTypes.create sends {"device_type": ..., "id": null}.
	stb := su.object(t, http.MethodPost, "/device_types/", map[string]any{"device_type": "tvip_s605", "id": nil}, sdkDeviceType)
	stbID := obj(stb).id(t)
	tv := obj(su.object(t, http.MethodPost, "/device_types/", map[string]any{"device_type": "Android TV", "id": nil}, sdkDeviceType)).id(t)
	sameObject(t, "GET", su.object(t, http.MethodGet, fmt.Sprintf("/device_types/%d", stbID), nil, sdkDeviceType), stb)

	const all = "/device_types/?start=0&limit=50"
	wantIDs(t, "list", su.list(t, all, sdkDeviceType), stbID, tv)
	wantIDs(t, "sorted", su.list(t, all+"&sort=device_type", sdkDeviceType), tv, stbID)
	su.narrows(t, all, "quick_search=android", sdkDeviceType, tv)
	su.unknownFilter(t, "/device_types/")

	// Update: the whole object re-sent appends nothing; PUT and
	// POST-with-id rename.
	path := fmt.Sprintf("/device_types/%d", stbID)
	before := head(t, env)
	su.ok(t, http.MethodPut, path, stb)
	if after := head(t, env); after != before {
		t.Fatalf("a re-send appended: %v → %v", before, after)
	}
	if u := su.object(t, http.MethodPut, path, map[string]any{"device_type": "tvip_s705", "id": stbID}, sdkDeviceType); u["device_type"] != "tvip_s705" {
		t.Fatalf("PUT %v", u)
	}
	if u := su.object(t, http.MethodPost, "/device_types/", map[string]any{"device_type": "tvip_s605", "id": stbID}, sdkDeviceType); u["device_type"] != "tvip_s605" {
		t.Fatalf("POST with id %v", u)
	}
	su.fails(t, http.StatusBadRequest, http.MethodPost, "/device_types/", map[string]any{"device_type": "", "id": nil}).field(t, "device_type")
	su.fails(t, http.StatusBadRequest, http.MethodPost, "/device_types/", map[string]any{"id": nil}).field(t, "device_type")
	su.fails(t, http.StatusBadRequest, http.MethodPut, path, map[string]any{"device_type": []int{1}}).field(t, "device_type")

	// Every admin reads them; only superadmins write them.
	wantIDs(t, "scoped list", scoped.list(t, all, sdkDeviceType), stbID, tv)
	scoped.object(t, http.MethodGet, path, nil, sdkDeviceType)
	before = head(t, env)
	scoped.fails(t, http.StatusForbidden, http.MethodPost, "/device_types/", map[string]any{"device_type": "mine", "id": nil})
	scoped.fails(t, http.StatusForbidden, http.MethodPut, path, map[string]any{"device_type": "mine"})
	scoped.fails(t, http.StatusForbidden, http.MethodDelete, path, nil)
	if after := head(t, env); after != before {
		t.Fatalf("refused writes appended: %v → %v", before, after)
	}

	if d := obj(su.object(t, http.MethodDelete, path, nil, sdkDeviceType)); d.id(t) != stbID {
		t.Fatalf("delete answered %v", d)
	}
	su.fails(t, http.StatusNotFound, http.MethodGet, path, nil)
	su.fails(t, http.StatusNotFound, http.MethodPut, path, map[string]any{"device_type": "x"})
	wantIDs(t, "after delete", su.list(t, all, sdkDeviceType), tv)
}

// TestProviderCatalogChanges checks that the change feed reports the new
// catalog entities, a tariff tag only to its provider's admins.
func TestProviderCatalogChanges(t *testing.T) {
	ce := newCatalogEnv(t)
	region := mustAdmin(t, ce.env, http.MethodPost, "/regions", map[string]any{"name": "North"})
	devType := obj(ce.super.object(t, http.MethodPost, "/device_types/", map[string]any{"device_type": "stb"}, sdkDeviceType)).id(t)
	ce.super.ok(t, http.MethodPut, fmt.Sprintf("/tarif_tags/%d", ce.ourTag), map[string]any{"name": "Football"})

	entries := func(c papi) map[string][]int64 {
		all, _ := feed(t, c, "", 100)
		out := map[string][]int64{}
		for _, e := range all {
			out[e.str(t, "entity")] = append(out[e.str(t, "entity")], e.id(t))
		}
		return out
	}
	got := entries(superClient(ce.env))
	if want := []int64{ce.acmeTag, ce.ourTag, ce.ourTag}; !slices.Equal(got["tariff_tag"], want) {
		t.Errorf("tariff_tag entries %v, want %v", got["tariff_tag"], want)
	}
	if !slices.Equal(got["region"], []int64{region}) || !slices.Equal(got["device_type"], []int64{devType}) {
		t.Errorf("feed %v", got)
	}
	scoped := entries(papi{env: ce.env, login: ce.scoped.login, pass: ce.scoped.pass})
	if !slices.Equal(scoped["tariff_tag"], []int64{ce.acmeTag}) || !slices.Equal(scoped["region"], []int64{region}) ||
		!slices.Equal(scoped["device_type"], []int64{devType}) {
		t.Errorf("scoped feed %v", scoped)
	}
}

// jsonNum is n as decodeNumbers gives it.
func jsonNum(n int64) any { return json.Number(strconv.FormatInt(n, 10)) }
