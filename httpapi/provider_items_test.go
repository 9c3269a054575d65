package httpapi_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"testing"

	"tvsm/domain"
	"tvsm/internal/testkit/nodetest"
)

func TestProviderSubscriptionLifecycle(t *testing.T) {
	env := nodetest.Start(t)
	p := superClient(env)
	prov := mustProvider(t, env, "Acme")
	basic := mustTariff(t, env, prov, "Basic")
	premium := mustTariff(t, env, prov, "Premium")
	a := p.ok(t, http.MethodPost, "/accounts", accountBody(prov, "anna")).id(t)

	// Create: every field, exact names, stop and the DTOs null, dates in
	// the API's form (offset without colon, UTC).
	status, body := p.do(t, http.MethodPost, "/account_subscriptions",
		map[string]any{"account": a, "start": "2026-11-22T20:59:41+03:00", "tarif": basic})
	if status != http.StatusOK {
		t.Fatalf("create: %d %s", status, body)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(maps.Keys(raw)), []string{"account", "account_dto", "id", "start", "stop", "tarif", "tarif_dto", "time_shift_depth"}; !slices.Equal(got, want) {
		t.Fatalf("fields %v, want %v", got, want)
	}
	for _, k := range []string{"stop", "tarif_dto", "account_dto", "time_shift_depth"} {
		if string(raw[k]) != "null" {
			t.Errorf("%s = %s, want null", k, raw[k])
		}
	}
	s := decodeObj(t, body)
	if s.int(t, "account") != a || s.int(t, "tarif") != basic || s.str(t, "start") != "2026-11-22T17:59:41+0000" {
		t.Fatalf("created %v", s)
	}
	path := fmt.Sprintf("/account_subscriptions/%d", s.id(t))
	// Read-your-writes, by id and in the account's list.
	if got := p.ok(t, http.MethodGet, path, nil); !maps.Equal(got, s) {
		t.Fatalf("GET %v, want %v", got, s)
	}
	l := p.ok(t, http.MethodGet, fmt.Sprintf("/account_subscriptions?account=%d", a), nil)
	if got := ids(t, l.list(t)); !slices.Equal(got, []int64{s.id(t)}) {
		t.Fatalf("list %v", got)
	}

	// End it with POST-with-id and stop, as the Provider API does.
	u := p.ok(t, http.MethodPost, "/account_subscriptions", map[string]any{"id": s.id(t), "stop": "2027-01-01T00:00:00Z"})
	if u.str(t, "stop") != "2027-01-01T00:00:00+0000" || u.str(t, "start") != s.str(t, "start") {
		t.Fatalf("ended %v", u)
	}
	// A full re-send appends nothing.
	before := head(t, env)
	p.ok(t, http.MethodPost, "/account_subscriptions", u)
	p.ok(t, http.MethodPut, path, map[string]any{"account": a, "tarif": fmt.Sprint(basic), "start": "2026-11-22T17:59:41Z", "stop": "2027-01-01T03:00:00+03:00"})
	if after := head(t, env); after != before {
		t.Fatalf("re-send appended: %v → %v", before, after)
	}
	// PUT: reopen with a null stop, switch tariff.
	u = p.ok(t, http.MethodPut, path, map[string]any{"stop": nil, "tarif": premium})
	if u["stop"] != nil || u.int(t, "tarif") != premium {
		t.Fatalf("reopened %v", u)
	}
	l = p.ok(t, http.MethodGet, fmt.Sprintf("/account_subscriptions?tarif=%d", premium), nil)
	if got := ids(t, l.list(t)); !slices.Equal(got, []int64{s.id(t)}) {
		t.Fatalf("tarif filter %v", got)
	}

	// Delete it.
	if d := p.ok(t, http.MethodDelete, path, nil); d.id(t) != s.id(t) {
		t.Fatalf("delete answered %v", d)
	}
	p.fails(t, http.StatusNotFound, http.MethodGet, path, nil)
	p.fails(t, http.StatusNotFound, http.MethodDelete, path, nil)
	p.fails(t, http.StatusNotFound, http.MethodPut, path, map[string]any{"stop": nil})
	if l := p.ok(t, http.MethodGet, fmt.Sprintf("/account_subscriptions?account=%d", a), nil); l.int(t, "total") != 0 {
		t.Fatalf("after delete %v", l)
	}
	// Deleting the account takes its subscriptions along.
	s2 := p.ok(t, http.MethodPost, "/account_subscriptions", map[string]any{"account": a, "start": "2026-01-01T00:00:00Z", "tarif": basic, "stop": nil})
	p.ok(t, http.MethodDelete, fmt.Sprintf("/accounts/%d", a), nil)
	p.fails(t, http.StatusNotFound, http.MethodGet, fmt.Sprintf("/account_subscriptions/%d", s2.id(t)), nil)
}

func TestProviderSubscriptionValidation(t *testing.T) {
	env := nodetest.Start(t)
	p := superClient(env)
	prov := mustProvider(t, env, "Acme")
	other := mustProvider(t, env, "Other")
	tariff := mustTariff(t, env, prov, "Basic")
	foreign := mustTariff(t, env, other, "Foreign")
	a := p.ok(t, http.MethodPost, "/accounts", accountBody(prov, "anna")).id(t)

	body := func(k string, v any) map[string]any {
		b := map[string]any{"account": a, "start": "2026-01-01T00:00:00+0000", "tarif": tariff}
		if v == nil {
			delete(b, k)
		} else {
			b[k] = v
		}
		return b
	}
	for _, tc := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"missing account", body("account", nil), "account"},
		{"unknown account", body("account", 424242), "account"},
		{"account not a number", body("account", "x"), "account"},
		{"missing start", body("start", nil), "start"},
		{"empty start", body("start", ""), "start"},
		{"bad date", body("start", "2026-13-01T00:00:00+0000"), "start"},
		{"date without offset", body("start", "2026-01-01T00:00:00"), "start"},
		{"date with a space", body("start", "2026-01-01 00:00:00+0000"), "start"},
		{"missing tarif", body("tarif", nil), "tarif"},
		{"unknown tarif", body("tarif", 999), "tarif"},
		{"tarif of another provider", body("tarif", foreign), "tarif"},
		{"stop before start", body("stop", "2025-01-01T00:00:00+0000"), "stop"},
		{"stop equal to start", body("stop", "2026-01-01T03:00:00+03:00"), "stop"},
		{"bad stop", body("stop", "soon"), "stop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.fails(t, http.StatusBadRequest, http.MethodPost, "/account_subscriptions", tc.body).field(t, tc.field)
		})
	}
	s := p.ok(t, http.MethodPost, "/account_subscriptions", body("stop", "2027-01-01T00:00:00+0000"))
	path := fmt.Sprintf("/account_subscriptions/%d", s.id(t))
	p.fails(t, http.StatusBadRequest, http.MethodPut, path, map[string]any{"stop": "2025-01-01T00:00:00+0000"}).field(t, "stop")
	p.fails(t, http.StatusBadRequest, http.MethodPut, path, map[string]any{"start": "2028-01-01T00:00:00+0000"}).field(t, "stop")
	p.fails(t, http.StatusBadRequest, http.MethodPut, path, map[string]any{"tarif": foreign}).field(t, "tarif")
	p.fails(t, http.StatusBadRequest, http.MethodPut, path, map[string]any{"tarif": 999}).field(t, "tarif")
	b := p.ok(t, http.MethodPost, "/accounts", accountBody(prov, "boris")).id(t)
	p.fails(t, http.StatusBadRequest, http.MethodPut, path, map[string]any{"account": b}).field(t, "account")
	p.fails(t, http.StatusBadRequest, http.MethodGet, "/account_subscriptions?account=abc", nil).field(t, "account")
	p.fails(t, http.StatusBadRequest, http.MethodGet, "/account_subscriptions?sort=name", nil).field(t, "sort")
	if got := p.ok(t, http.MethodGet, path, nil); got.str(t, "stop") != "2027-01-01T00:00:00+0000" {
		t.Fatalf("changed by failures: %v", got)
	}
}

func TestProviderSubscriptionScopeAndIdempotency(t *testing.T) {
	env := nodetest.Start(t)
	p := superClient(env)
	acme := mustProvider(t, env, "Acme")
	other := mustProvider(t, env, "Other")
	at := mustTariff(t, env, acme, "A")
	ot := mustTariff(t, env, other, "O")
	mine := p.ok(t, http.MethodPost, "/accounts", accountBody(acme, "mine")).id(t)
	theirs := p.ok(t, http.MethodPost, "/accounts", accountBody(other, "theirs")).id(t)
	ms := p.ok(t, http.MethodPost, "/account_subscriptions", map[string]any{"account": mine, "start": "2026-01-01T00:00:00Z", "tarif": at}).id(t)
	ts := p.ok(t, http.MethodPost, "/account_subscriptions", map[string]any{"account": theirs, "start": "2026-01-01T00:00:00Z", "tarif": ot}).id(t)

	s := scopedClient(t, env, "acme-admin", acme)
	l := s.ok(t, http.MethodGet, "/account_subscriptions", nil)
	if got := ids(t, l.list(t)); !slices.Equal(got, []int64{ms}) {
		t.Fatalf("scoped list %v", got)
	}
	if l := s.ok(t, http.MethodGet, fmt.Sprintf("/account_subscriptions?account=%d", theirs), nil); l.int(t, "total") != 0 {
		t.Fatalf("scoped list of another provider's account: %v", l)
	}
	tp := fmt.Sprintf("/account_subscriptions/%d", ts)
	s.fails(t, http.StatusForbidden, http.MethodGet, tp, nil)
	s.fails(t, http.StatusForbidden, http.MethodPut, tp, map[string]any{"stop": "2027-01-01T00:00:00Z"})
	s.fails(t, http.StatusForbidden, http.MethodDelete, tp, nil)
	s.fails(t, http.StatusForbidden, http.MethodPost, "/account_subscriptions", map[string]any{"account": theirs, "start": "2026-01-01T00:00:00Z", "tarif": ot})
	s.ok(t, http.MethodPut, fmt.Sprintf("/account_subscriptions/%d", ms), map[string]any{"stop": "2027-01-01T00:00:00Z"})

	// Idempotency-Key: the retry gets the first answer and appends nothing.
	key := http.Header{"Idempotency-Key": {"sub-1"}}
	b := map[string]any{"account": mine, "start": "2026-06-01T00:00:00Z", "tarif": at}
	status, first := s.doHeader(t, http.MethodPost, "/account_subscriptions", b, key)
	if status != http.StatusOK {
		t.Fatalf("first: %d %s", status, first)
	}
	before := head(t, env)
	status, again := s.doHeader(t, http.MethodPost, "/account_subscriptions", b, key)
	if status != http.StatusOK || string(again) != string(first) {
		t.Fatalf("retry: %d %s, want %s", status, again, first)
	}
	if after := head(t, env); after != before {
		t.Fatalf("retry appended %v → %v", before, after)
	}
	if l := s.ok(t, http.MethodGet, fmt.Sprintf("/account_subscriptions?account=%d", mine), nil); l.int(t, "total") != 2 {
		t.Fatalf("subscriptions: %v", l)
	}
	b["start"] = "2026-07-01T00:00:00Z"
	if status, _ := s.doHeader(t, http.MethodPost, "/account_subscriptions", b, key); status != http.StatusUnprocessableEntity {
		t.Fatalf("same key, other body: %d", status)
	}
}

func TestProviderDevices(t *testing.T) {
	env := nodetest.Start(t)
	p := superClient(env)
	acme := mustProvider(t, env, "Acme")
	other := mustProvider(t, env, "Other")
	a := p.ok(t, http.MethodPost, "/accounts", accountBody(acme, "anna")).id(t)
	b := p.ok(t, http.MethodPost, "/accounts", accountBody(other, "boris")).id(t)
	d1 := bindDevice(t, env, a, "MAC-1")
	d2 := bindDevice(t, env, a, "MAC-2")
	d3 := bindDevice(t, env, b, "MAC-3")

	check := func(c papi, query string, want ...int64) {
		t.Helper()
		l := c.ok(t, http.MethodGet, "/devices"+query, nil)
		if got := ids(t, l.list(t)); !slices.Equal(got, want) || l.int(t, "total") != int64(len(want)) {
			t.Fatalf("%s: %v (total %v), want %v", query, got, l["total"], want)
		}
	}
	check(p, "", d1, d2, d3)
	check(p, fmt.Sprintf("?account=%d", a), d1, d2)
	check(p, fmt.Sprintf("?provider=%d", other), d3)
	check(p, "?unique_id=MAC-2", d2)
	if l := p.ok(t, http.MethodGet, "/devices?sort=-id&limit=2", nil); !slices.Equal(ids(t, l.list(t)), []int64{d3, d2}) || l.int(t, "total") != 3 {
		t.Fatalf("sorted page %v", l)
	}

	dev := p.ok(t, http.MethodGet, fmt.Sprintf("/devices/%d", d1), nil)
	if dev.int(t, "account") != a || dev.int(t, "provider") != acme || dev.str(t, "unique_id") != "MAC-1" ||
		dev.str(t, "class") != "stb" || dev.str(t, "model") != "box-1" || dev.str(t, "created") == "" {
		t.Fatalf("device %v", dev)
	}

	s := scopedClient(t, env, "acme-admin", acme)
	check(s, "", d1, d2)
	check(s, "?unique_id=MAC-3")
	s.fails(t, http.StatusForbidden, http.MethodGet, fmt.Sprintf("/devices/%d", d3), nil)
	s.fails(t, http.StatusForbidden, http.MethodDelete, fmt.Sprintf("/devices/%d", d3), nil)

	// DELETE unbinds.
	if got := s.ok(t, http.MethodDelete, fmt.Sprintf("/devices/%d", d1), nil); got.id(t) != d1 {
		t.Fatalf("unbind answered %v", got)
	}
	p.fails(t, http.StatusNotFound, http.MethodGet, fmt.Sprintf("/devices/%d", d1), nil)
	p.fails(t, http.StatusNotFound, http.MethodDelete, fmt.Sprintf("/devices/%d", d1), nil)
	check(p, fmt.Sprintf("?account=%d", a), d2)
	p.fails(t, http.StatusBadRequest, http.MethodGet, "/devices?account=x", nil).field(t, "account")
	p.fails(t, http.StatusNotFound, http.MethodGet, "/devices/12345", nil)
}

func TestProviderAccountHistory(t *testing.T) {
	env := nodetest.Start(t)
	p := superClient(env)
	prov := mustProvider(t, env, "Acme")
	tariff := mustTariff(t, env, prov, "Basic")
	s := scopedClient(t, env, "alice", prov)
	b := accountBody(prov, "anna")
	b["contract_info"] = "C-1"
	a := s.ok(t, http.MethodPost, "/accounts", b).id(t)
	path := fmt.Sprintf("/accounts/%d", a)
	p.ok(t, http.MethodPut, path, map[string]any{"fullname": "Anna K.", "contract_info": nil, "pin_md5": pin("other")})
	p.ok(t, http.MethodPut, path, map[string]any{"fullname": "Anna K."}) // no change: no entry
	sub := s.ok(t, http.MethodPost, "/account_subscriptions", map[string]any{"account": a, "start": "2026-01-01T00:00:00Z", "tarif": tariff}).id(t)
	s.ok(t, http.MethodPost, "/account_subscriptions", map[string]any{"id": sub, "stop": "2026-02-01T00:00:00Z"})
	dev := bindDevice(t, env, a, "MAC-1")
	s.ok(t, http.MethodDelete, path, nil)

	h := s.ok(t, http.MethodGet, path+"/history", nil)
	entries := h.list(t)
	var types []string
	for _, e := range entries {
		types = append(types, e.str(t, "type"))
		if _, err := parseDateTime(e.str(t, "time")); err != nil {
			t.Errorf("time: %v", err)
		}
		if e.str(t, "request_id") == "" {
			t.Errorf("no request id: %v", e)
		}
	}
	want := []string{domain.AccountCreatedType, domain.AccountUpdatedType, "SubscriptionAdded.v1", "SubscriptionChanged.v1", "DeviceBound.v1", "AccountDeleted.v1"}
	if !slices.Equal(types, want) {
		t.Fatalf("types %v, want %v", types, want)
	}
	actors := []string{"admin:alice", "admin:root", "admin:alice", "admin:alice", fmt.Sprintf("device:%d", dev), "admin:alice"}
	for i, e := range entries {
		if e.str(t, "actor") != actors[i] || e.int(t, "revision") != int64(i) {
			t.Errorf("entry %d: actor %v revision %v", i, e["actor"], e["revision"])
		}
	}
	changes := func(i int) map[string]obj {
		out := map[string]obj{}
		for _, c := range entries[i]["changes"].([]any) {
			c := obj(c.(map[string]any))
			out[c.str(t, "field")] = c
		}
		return out
	}
	c0 := changes(0)
	if c0["login"]["new"] != "anna" || c0["login"]["old"] != nil || c0["contract_info"]["new"] != "C-1" {
		t.Fatalf("created: %v", c0)
	}
	if pin := c0["pin_md5"]; pin["secret"] != true || pin["old"] != nil || pin["new"] != nil {
		t.Fatalf("pin on create: %v", pin)
	}
	c1 := changes(1)
	if c1["fullname"]["old"] != "Subscriber anna" || c1["fullname"]["new"] != "Anna K." ||
		c1["contract_info"]["old"] != "C-1" || c1["contract_info"]["new"] != nil || c1["pin_md5"]["secret"] != true {
		t.Fatalf("update: %v", c1)
	}
	if _, ok := c1["login"]; ok {
		t.Fatalf("unchanged field in diff: %v", c1)
	}
	c3 := changes(3)
	key := fmt.Sprintf("subscriptions[%d].stop", sub)
	if c3[key]["old"] != nil || c3[key]["new"] != "2026-02-01T00:00:00+0000" {
		t.Fatalf("subscription end: %v", c3)
	}
	if c4 := changes(4); c4[fmt.Sprintf("devices[%d].class", dev)]["new"] != "stb" {
		t.Fatalf("device bound: %v", c4)
	}

	// Scope and unknown ids.
	other := mustProvider(t, env, "Other")
	o := scopedClient(t, env, "olga", other)
	o.fails(t, http.StatusForbidden, http.MethodGet, path+"/history", nil)
	p.fails(t, http.StatusNotFound, http.MethodGet, "/accounts/999999/history", nil)
}
