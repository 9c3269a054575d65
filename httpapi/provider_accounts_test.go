package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"tvsm/internal/testkit/nodetest"
)

func TestProviderAccountCreateAnswersEveryField(t *testing.T) {
	env := nodetest.Start(t)
	p := superClient(env)
	prov := mustProvider(t, env, "Acme")

	status, body := p.do(t, http.MethodPost, "/accounts", accountBody(prov, "anna"))
	if status != http.StatusOK {
		t.Fatalf("create: %d %s", status, body)
	}
	// Exact key set: every field of the Provider API's account object (with
	// TVIP's created, updated and last_online) plus services_available.
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	want := []string{"id", "enabled", "login", "pin_md5", "fullname", "provider", "remote_custom_field", "contract_info",
		"main_address", "account_desc", "provider_dto", "region_tag", "region_dto", "devices_per_account_limit",
		"created", "updated", "last_online", "services_available"}
	if got := slices.Sorted(maps.Keys(raw)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Fatalf("fields %v, want %v", got, want)
	}
	for _, k := range []string{"pin_md5", "provider_dto", "region_dto", "remote_custom_field", "contract_info",
		"main_address", "account_desc", "region_tag", "devices_per_account_limit", "last_online"} {
		if string(raw[k]) != "null" {
			t.Errorf("%s = %s, want null", k, raw[k])
		}
	}
	a := decodeObj(t, body)
	if a.id(t) <= 0 || a["enabled"] != true || a.str(t, "login") != "anna" || a.str(t, "fullname") != "Subscriber anna" ||
		a.int(t, "provider") != prov || a["services_available"] != false {
		t.Fatalf("created %v", a)
	}
	// created and updated are Unix seconds, as TVIP's SDK reads them.
	if created, updated := a.int(t, "created"), a.int(t, "updated"); time.Since(time.Unix(created, 0)).Abs() > time.Minute || updated != created {
		t.Fatalf("created %d, updated %d: want now, and equal", created, updated)
	}

	// Read-your-writes: the very next read sees it, by id and in the list.
	got := p.ok(t, http.MethodGet, fmt.Sprintf("/accounts/%d", a.id(t)), nil)
	if !maps.Equal(got, a) {
		t.Fatalf("GET %v\nwant %v", got, a)
	}
	l := p.ok(t, http.MethodGet, "/accounts", nil)
	if ids := ids(t, l.list(t)); !slices.Equal(ids, []int64{a.id(t)}) || l.int(t, "total") != 1 {
		t.Fatalf("list %v", l)
	}

	// Nullable fields set on create come back.
	b := accountBody(prov, "boris")
	b["enabled"] = false
	b["contract_info"] = "C-1"
	b["remote_custom_field"] = "ext-1"
	b["devices_per_account_limit"] = 3
	a2 := p.ok(t, http.MethodPost, "/accounts", b)
	if a2["enabled"] != false || a2.str(t, "contract_info") != "C-1" || a2.str(t, "remote_custom_field") != "ext-1" ||
		a2.int(t, "devices_per_account_limit") != 3 || a2["main_address"] != nil {
		t.Fatalf("created %v", a2)
	}
}

func TestProviderAccountLenientInput(t *testing.T) {
	env := nodetest.Start(t)
	p := superClient(env)
	prov := mustProvider(t, env, "Acme")

	// 0/1 booleans, a numeric string for the provider, a login sent as a
	// bare number, id null and read-only fields on create, an unknown
	// field, and "enable" (the spelling of TVIP's prose).
	body := fmt.Sprintf(`{"id":null,"enabled":0,"login":100200,"pin_md5":"%s","fullname":"F","provider":"%d",
		"created":"2020-01-01T00:00:00+0000","provider_dto":{"x":1},"last_online":"x","color":"red"}`,
		"0123456789ABCDEF0123456789abcdef", prov)
	a := p.ok(t, http.MethodPost, "/accounts", body)
	if a["enabled"] != false || a.str(t, "login") != "100200" || a.int(t, "provider") != prov {
		t.Fatalf("created %v", a)
	}
	a = p.ok(t, http.MethodPost, "/accounts", map[string]any{"id": fmt.Sprint(a.id(t)), "enabled": "1"})
	if a["enabled"] != true {
		t.Fatalf("enabled %v", a["enabled"])
	}
	// id 0 (a client's unset primitive) creates.
	z := accountBody(prov, "zero")
	z["id"] = 0
	if a := p.ok(t, http.MethodPost, "/accounts", z); a.id(t) <= 0 || a.str(t, "login") != "zero" {
		t.Fatalf("id 0 created %v", a)
	}
	p.fails(t, http.StatusBadRequest, http.MethodPost, "/accounts", map[string]any{"id": -5, "fullname": "x"}).field(t, "id")
	b := accountBody(prov, "x2")
	delete(b, "enabled")
	b["enable"] = 0
	if a := p.ok(t, http.MethodPost, "/accounts", b); a["enabled"] != false {
		t.Fatalf("enable=0 gave %v", a["enabled"])
	}
}

func TestProviderAccountValidation(t *testing.T) {
	env := nodetest.Start(t)
	p := superClient(env)
	prov := mustProvider(t, env, "Acme")
	p.ok(t, http.MethodPost, "/accounts", accountBody(prov, "taken"))

	with := func(k string, v any) map[string]any {
		b := accountBody(prov, "new")
		if v == nil {
			delete(b, k)
		} else {
			b[k] = v
		}
		return b
	}
	for _, tc := range []struct {
		name  string
		body  any
		field string
	}{
		{"missing login", with("login", nil), "login"},
		{"blank login", with("login", " "), "login"},
		{"login with spaces around", with("login", " x "), "login"},
		{"missing pin", with("pin_md5", nil), "pin_md5"},
		{"short pin", with("pin_md5", "abc"), "pin_md5"},
		{"non-hex pin", with("pin_md5", "zz23456789abcdef0123456789abcdef"), "pin_md5"},
		{"missing fullname", with("fullname", nil), "fullname"},
		{"missing provider", with("provider", nil), "provider"},
		{"unknown provider", with("provider", 999), "provider"},
		{"provider not a number", with("provider", "abc"), "provider"},
		{"enabled not a boolean", with("enabled", "yes"), "enabled"},
		{"negative device limit", with("devices_per_account_limit", -1), "devices_per_account_limit"},
		{"huge device limit", with("devices_per_account_limit", int64(1)<<40), "devices_per_account_limit"},
		{"duplicate login", with("login", "taken"), "login"},
		{"fullname an object", with("fullname", map[string]any{}), "fullname"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := p.fails(t, http.StatusBadRequest, http.MethodPost, "/accounts", tc.body)
			e.field(t, tc.field)
			if e.Code != "validation_failed" {
				t.Fatalf("code %q", e.Code)
			}
		})
	}
	// Every bad field at once.
	e := p.fails(t, http.StatusBadRequest, http.MethodPost, "/accounts", map[string]any{"provider": prov})
	for _, f := range []string{"login", "pin_md5", "fullname"} {
		e.field(t, f)
	}
	if got := p.fails(t, http.StatusBadRequest, http.MethodPost, "/accounts", with("login", "taken")).field(t, "login"); got != "already taken" {
		t.Fatalf("duplicate login: %q", got)
	}
	// Not JSON objects, other media types.
	p.fails(t, http.StatusBadRequest, http.MethodPost, "/accounts", `[1,2]`)
	p.fails(t, http.StatusBadRequest, http.MethodPost, "/accounts", `{"login":`)
	status, _ := env.DoHeader(t, http.MethodPost, "/api/provider/accounts", env.SuperLogin, env.SuperPassword,
		`login=x`, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
	if status != http.StatusUnsupportedMediaType {
		t.Fatalf("form body: %d", status)
	}
	// Nothing of the failed creates reached the list.
	if l := p.ok(t, http.MethodGet, "/accounts", nil); l.int(t, "total") != 1 {
		t.Fatalf("list after failures: %v", l)
	}
	// The duplicate is refused for the same provider only.
	other := mustProvider(t, env, "Other")
	p.ok(t, http.MethodPost, "/accounts", accountBody(other, "taken"))
	// Logins are case-sensitive.
	p.ok(t, http.MethodPost, "/accounts", accountBody(prov, "TAKEN"))
}

func TestProviderAccountUpdate(t *testing.T) {
	env := nodetest.Start(t)
	p := superClient(env)
	prov := mustProvider(t, env, "Acme")
	b := accountBody(prov, "anna")
	b["contract_info"] = "C-1"
	a := p.ok(t, http.MethodPost, "/accounts", b)
	id := a.id(t)
	path := fmt.Sprintf("/accounts/%d", id)

	// POST with id: partial update; the other fields stay.
	u := p.ok(t, http.MethodPost, "/accounts", map[string]any{"id": id, "fullname": "Anna K."})
	if u.str(t, "fullname") != "Anna K." || u.str(t, "contract_info") != "C-1" || u.str(t, "login") != "anna" {
		t.Fatalf("after POST update: %v", u)
	}
	if got := p.ok(t, http.MethodGet, path, nil); got.str(t, "fullname") != "Anna K." {
		t.Fatalf("GET after update: %v", got)
	}
	// PUT: partial; null clears a nullable field; pin_md5 null changes nothing.
	u = p.ok(t, http.MethodPut, path, map[string]any{"contract_info": nil, "main_address": "Main st 1", "pin_md5": nil, "enabled": 0})
	if u["contract_info"] != nil || u.str(t, "main_address") != "Main st 1" || u["enabled"] != false || u["pin_md5"] != nil {
		t.Fatalf("after PUT: %v", u)
	}
	// POST to /accounts/{id} works like PUT; an id in the body must agree.
	region := mustAdmin(t, env, http.MethodPost, "/regions", map[string]any{"name": "North"})
	u = p.ok(t, http.MethodPost, path, map[string]any{"id": id, "region_tag": fmt.Sprint(region)})
	if u.int(t, "region_tag") != region {
		t.Fatalf("after POST /{id}: %v", u)
	}
	// region_tag is a region's id: text that is not one, or an id no
	// region has, is refused.
	p.fails(t, http.StatusBadRequest, http.MethodPut, path, map[string]any{"region_tag": "north"}).field(t, "region_tag")
	p.fails(t, http.StatusBadRequest, http.MethodPut, path, map[string]any{"region_tag": region + 100}).field(t, "region_tag")
	// A region an account is in cannot be deleted.
	if status, body := env.Super(t, http.MethodDelete, fmt.Sprintf("/api/admin/regions/%d", region), nil); status != http.StatusConflict ||
		!strings.Contains(string(body), "account") {
		t.Fatalf("deleting a region in use: %d %s", status, body)
	}
	p.fails(t, http.StatusBadRequest, http.MethodPut, path, map[string]any{"id": id + 1, "fullname": "x"}).field(t, "id")

	// Bad values name their field; the provider cannot change.
	p.fails(t, http.StatusBadRequest, http.MethodPut, path, map[string]any{"pin_md5": "nope"}).field(t, "pin_md5")
	p.fails(t, http.StatusBadRequest, http.MethodPut, path, map[string]any{"fullname": ""}).field(t, "fullname")
	other := mustProvider(t, env, "Other")
	p.fails(t, http.StatusBadRequest, http.MethodPut, path, map[string]any{"provider": other}).field(t, "provider")
	p.ok(t, http.MethodPut, path, map[string]any{"provider": prov}) // re-sent unchanged: fine

	// Unknown ids.
	p.fails(t, http.StatusNotFound, http.MethodPut, "/accounts/999999", map[string]any{"fullname": "x"})
	p.fails(t, http.StatusNotFound, http.MethodPost, "/accounts", map[string]any{"id": 999999, "fullname": "x"})
	p.fails(t, http.StatusNotFound, http.MethodGet, "/accounts/999999", nil)
	p.fails(t, http.StatusNotFound, http.MethodGet, "/accounts/0", nil)
	p.fails(t, http.StatusBadRequest, http.MethodGet, "/accounts/abc", nil).field(t, "id")
}

func TestProviderAccountLoginChange(t *testing.T) {
	env := nodetest.Start(t)
	p := superClient(env)
	prov := mustProvider(t, env, "Acme")
	a := p.ok(t, http.MethodPost, "/accounts", accountBody(prov, "old"))
	p.ok(t, http.MethodPost, "/accounts", accountBody(prov, "other"))
	path := fmt.Sprintf("/accounts/%d", a.id(t))

	// A taken login is refused and changes nothing.
	p.fails(t, http.StatusBadRequest, http.MethodPut, path, map[string]any{"login": "other"}).field(t, "login")
	if got := p.ok(t, http.MethodGet, path, nil); got.str(t, "login") != "old" {
		t.Fatalf("login %v", got["login"])
	}
	// A free one is taken; the old one becomes free for another account,
	// the new one is not.
	if got := p.ok(t, http.MethodPut, path, map[string]any{"login": "new"}); got.str(t, "login") != "new" {
		t.Fatalf("login %v", got["login"])
	}
	p.ok(t, http.MethodPost, "/accounts", accountBody(prov, "old"))
	p.fails(t, http.StatusBadRequest, http.MethodPost, "/accounts", accountBody(prov, "new")).field(t, "login")
	// A bad login reserves nothing.
	p.fails(t, http.StatusBadRequest, http.MethodPut, path, map[string]any{"login": "fresh", "pin_md5": "x"}).field(t, "pin_md5")
	p.fails(t, http.StatusBadRequest, http.MethodPut, path, map[string]any{"login": "bad\x01"}).field(t, "login")
	p.ok(t, http.MethodPost, "/accounts", accountBody(prov, "fresh"))
	// Filter by login finds it.
	l := p.ok(t, http.MethodGet, "/accounts?login=new", nil)
	if got := ids(t, l.list(t)); !slices.Equal(got, []int64{a.id(t)}) {
		t.Fatalf("login=new: %v", got)
	}
}

func TestProviderAccountResendAppendsNothing(t *testing.T) {
	env := nodetest.Start(t)
	p := superClient(env)
	prov := mustProvider(t, env, "Acme")
	b := accountBody(prov, "anna")
	b["contract_info"] = "C-1"
	b["devices_per_account_limit"] = "2"
	a := p.ok(t, http.MethodPost, "/accounts", b)
	path := fmt.Sprintf("/accounts/%d", a.id(t))

	before := head(t, env)
	// The record as read, sent back whole: pin_md5 null, *_dto, created.
	if got := p.ok(t, http.MethodPost, "/accounts", a); !maps.Equal(got, a) {
		t.Fatalf("re-send answered %v\nwant %v", got, a)
	}
	p.ok(t, http.MethodPut, path, a)
	// The record as first sent, with its id.
	b["id"] = a.id(t)
	p.ok(t, http.MethodPost, "/accounts", b)
	// The same pin in upper case, the limit as a number.
	b["pin_md5"] = strings.ToUpper(pin("anna"))
	b["devices_per_account_limit"] = 2
	p.ok(t, http.MethodPut, path, b)
	if after := head(t, env); after != before {
		t.Fatalf("re-sends appended: head %v → %v", before, after)
	}
	// A real change appends exactly one event.
	p.ok(t, http.MethodPut, path, map[string]any{"fullname": "New name"})
	if after := head(t, env); after.Commit != before.Commit+1 {
		t.Fatalf("one change: head %v → %v", before, after)
	}
}

func TestProviderAccountDelete(t *testing.T) {
	env := nodetest.Start(t)
	p := superClient(env)
	prov := mustProvider(t, env, "Acme")
	a := p.ok(t, http.MethodPost, "/accounts", accountBody(prov, "anna"))
	path := fmt.Sprintf("/accounts/%d", a.id(t))

	d := p.ok(t, http.MethodDelete, path, nil)
	if d.id(t) != a.id(t) || d.str(t, "login") != "anna" {
		t.Fatalf("delete answered %v", d)
	}
	p.fails(t, http.StatusNotFound, http.MethodGet, path, nil)
	p.fails(t, http.StatusNotFound, http.MethodDelete, path, nil)
	p.fails(t, http.StatusNotFound, http.MethodPut, path, map[string]any{"fullname": "x"})
	if l := p.ok(t, http.MethodGet, "/accounts", nil); l.int(t, "total") != 0 {
		t.Fatalf("list after delete: %v", l)
	}
	// The login is free again; the new account gets a new id.
	a2 := p.ok(t, http.MethodPost, "/accounts", accountBody(prov, "anna"))
	if a2.id(t) == a.id(t) {
		t.Fatal("id reused")
	}
}

func TestProviderAccountAuthAndScope(t *testing.T) {
	env := nodetest.Start(t)
	p := superClient(env)
	acme := mustProvider(t, env, "Acme")
	other := mustProvider(t, env, "Other")
	mine := p.ok(t, http.MethodPost, "/accounts", accountBody(acme, "mine"))
	theirs := p.ok(t, http.MethodPost, "/accounts", accountBody(other, "theirs"))
	theirPath := fmt.Sprintf("/accounts/%d", theirs.id(t))

	// 401 without or with bad credentials, with the error body.
	status, body := env.Do(t, http.MethodGet, "/api/provider/accounts", "", "", nil)
	if status != http.StatusUnauthorized || !bytes.Contains(body, []byte(`"statusCode":401`)) {
		t.Fatalf("no credentials: %d %s", status, body)
	}
	status, _ = env.Do(t, http.MethodGet, "/api/provider/accounts", env.SuperLogin, "wrong", nil)
	if status != http.StatusUnauthorized {
		t.Fatalf("bad password: %d", status)
	}
	status, _ = env.Do(t, http.MethodPost, "/api/provider/accounts", "nobody", "x", accountBody(acme, "x"))
	if status != http.StatusUnauthorized {
		t.Fatalf("unknown admin: %d", status)
	}

	s := scopedClient(t, env, "acme-admin", acme)
	// Lists show only the admin's provider, whatever the filter says.
	l := s.ok(t, http.MethodGet, "/accounts", nil)
	if got := ids(t, l.list(t)); !slices.Equal(got, []int64{mine.id(t)}) || l.int(t, "total") != 1 {
		t.Fatalf("scoped list %v", got)
	}
	l = s.ok(t, http.MethodGet, fmt.Sprintf("/accounts?provider=%d", other), nil)
	if l.int(t, "total") != 0 || len(l.list(t)) != 0 {
		t.Fatalf("scoped list of other provider: %v", l)
	}
	l = s.ok(t, http.MethodGet, "/accounts?login=theirs", nil)
	if l.int(t, "total") != 0 {
		t.Fatalf("scoped login lookup of other provider: %v", l)
	}
	// 403 for another provider's account, on every route.
	s.fails(t, http.StatusForbidden, http.MethodGet, theirPath, nil)
	s.fails(t, http.StatusForbidden, http.MethodPut, theirPath, map[string]any{"fullname": "x"})
	s.fails(t, http.StatusForbidden, http.MethodPost, "/accounts", map[string]any{"id": theirs.id(t), "fullname": "x"})
	s.fails(t, http.StatusForbidden, http.MethodDelete, theirPath, nil)
	s.fails(t, http.StatusForbidden, http.MethodGet, theirPath+"/history", nil)
	s.fails(t, http.StatusForbidden, http.MethodPost, "/accounts", accountBody(other, "sneaky"))
	if got := p.ok(t, http.MethodGet, theirPath, nil); got.str(t, "fullname") != "Subscriber theirs" {
		t.Fatalf("changed by a 403: %v", got)
	}
	// The admin's own: fine; the provider defaults to the admin's.
	s.ok(t, http.MethodPut, fmt.Sprintf("/accounts/%d", mine.id(t)), map[string]any{"fullname": "Mine"})
	b := accountBody(acme, "defaulted")
	delete(b, "provider")
	if a := s.ok(t, http.MethodPost, "/accounts", b); a.int(t, "provider") != acme {
		t.Fatalf("default provider: %v", a)
	}
	// A superadmin must name the provider.
	p.fails(t, http.StatusBadRequest, http.MethodPost, "/accounts", b).field(t, "provider")
}

func TestProviderAccountListQueries(t *testing.T) {
	env := nodetest.Start(t)
	p := superClient(env)
	acme := mustProvider(t, env, "Acme")
	other := mustProvider(t, env, "Other")
	var want []int64
	for i := range 5 {
		b := accountBody(acme, fmt.Sprintf("user%d", i))
		b["enabled"] = i%2 == 0
		b["remote_custom_field"] = fmt.Sprintf("ext-%d", i)
		if i == 3 {
			b["fullname"] = "Zoë Quick"
		}
		want = append(want, p.ok(t, http.MethodPost, "/accounts", b).id(t))
	}
	o := p.ok(t, http.MethodPost, "/accounts", accountBody(other, "user0")).id(t)

	check := func(query string, want ...int64) obj {
		t.Helper()
		l := p.ok(t, http.MethodGet, "/accounts"+query, nil)
		if got := ids(t, l.list(t)); !slices.Equal(got, want) {
			t.Fatalf("%s: %v, want %v", query, got, want)
		}
		return l
	}
	check("", append(slices.Clone(want), o)...)
	check(fmt.Sprintf("?provider=%d", acme), want...)
	check(fmt.Sprintf("?provider=%d&enabled=0", acme), want[1], want[3])
	check("?enabled=true&provider="+fmt.Sprint(acme), want[0], want[2], want[4])
	check("?login=user0", want[0], o)
	check("?remote_custom_field=ext-2", want[2])
	check("?quick_search=zoë", want[3])
	check("?quick_search=QUICK", want[3])
	check(fmt.Sprintf("?provider=%d&sort=-id", acme), want[4], want[3], want[2], want[1], want[0])
	l := check(fmt.Sprintf("?provider=%d&start=1&limit=2", acme), want[1], want[2])
	if l.int(t, "total") != 5 || l.int(t, "start") != 1 || l.int(t, "limit") != 2 {
		t.Fatalf("paging envelope %v", l)
	}
	check(fmt.Sprintf(`?filter=[{"property":"provider","value":%d}]&sort=login&dir=DESC&limit=1`, other), o)

	for _, tc := range []struct{ query, field string }{
		{"?enabled=maybe", "enabled"},
		{"?provider=abc", "provider"},
		{"?provider=-1", "provider"},
		{"?sort=password", "sort"},
		{"?start=-1", "start"},
		{"?limit=x", "limit"},
	} {
		p.fails(t, http.StatusBadRequest, http.MethodGet, "/accounts"+tc.query, nil).field(t, tc.field)
	}
}

func TestProviderAccountConcurrentCreatesOfOneLogin(t *testing.T) {
	env := nodetest.Start(t)
	prov := mustProvider(t, env, "Acme")
	const n = 20
	statuses := make([]int, n)
	bodies := make([][]byte, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			b := accountBody(prov, "race")
			b["fullname"] = fmt.Sprintf("Racer %d", i)
			statuses[i], bodies[i] = rawDo(env, http.MethodPost, "/api/provider/accounts", env.SuperLogin, env.SuperPassword, b, nil)
		})
	}
	close(start)
	wg.Wait()
	ok := 0
	for i, s := range statuses {
		switch s {
		case http.StatusOK:
			ok++
		case http.StatusBadRequest:
			var e apiError
			if err := json.Unmarshal(bodies[i], &e); err != nil || e.Fields["login"] == "" {
				t.Errorf("loser %d: %s", i, bodies[i])
			}
		default:
			t.Errorf("request %d: %d %s", i, s, bodies[i])
		}
	}
	if ok != 1 {
		t.Fatalf("%d creates succeeded, want exactly 1", ok)
	}
	l := superClient(env).ok(t, http.MethodGet, "/accounts?login=race", nil)
	if l.int(t, "total") != 1 {
		t.Fatalf("accounts with the login: %v", l)
	}
}

func TestProviderAccountIdempotencyKey(t *testing.T) {
	env := nodetest.Start(t)
	p := superClient(env)
	prov := mustProvider(t, env, "Acme")
	key := http.Header{"Idempotency-Key": {"sync-42"}}
	b := accountBody(prov, "anna")

	status, first := p.doHeader(t, http.MethodPost, "/accounts", b, key)
	if status != http.StatusOK {
		t.Fatalf("first: %d %s", status, first)
	}
	before := head(t, env)
	status, again := p.doHeader(t, http.MethodPost, "/accounts", b, key)
	if status != http.StatusOK || !bytes.Equal(again, first) {
		t.Fatalf("retry: %d %s\nwant %s", status, again, first)
	}
	if after := head(t, env); after != before {
		t.Fatalf("retry appended: %v → %v", before, after)
	}
	// The same key with another body: 422.
	b2 := accountBody(prov, "boris")
	status, body := p.doHeader(t, http.MethodPost, "/accounts", b2, key)
	if status != http.StatusUnprocessableEntity {
		t.Fatalf("other body: %d %s", status, body)
	}
	// Its cause says what to do and names nothing internal.
	var mismatch apiError
	if err := json.Unmarshal(body, &mismatch); err != nil || mismatch.Code != "idempotency_key_mismatch" ||
		!strings.Contains(mismatch.Cause, "new key") || strings.Contains(string(body), "idem-") || strings.Contains(string(body), "app:") {
		t.Fatalf("other body: %s", body)
	}
	// Another key: a new request (here refused: the login is taken).
	status, _ = p.doHeader(t, http.MethodPost, "/accounts", b, http.Header{"Idempotency-Key": {"sync-43"}})
	if status != http.StatusBadRequest {
		t.Fatalf("new key, same login: %d", status)
	}
	// A failed attempt is not recorded: fixing the problem with the same
	// key works.
	bad := accountBody(prov, "carl")
	bad["pin_md5"] = "x"
	k2 := http.Header{"Idempotency-Key": {"sync-44"}}
	if status, _ := p.doHeader(t, http.MethodPost, "/accounts", bad, k2); status != http.StatusBadRequest {
		t.Fatalf("bad create: %d", status)
	}
	if status, body := p.doHeader(t, http.MethodPost, "/accounts", accountBody(prov, "carl"), k2); status != http.StatusOK {
		t.Fatalf("fixed create under the same key: %d %s", status, body)
	}
	if l := p.ok(t, http.MethodGet, "/accounts", nil); l.int(t, "total") != 2 {
		t.Fatalf("accounts: %v", l)
	}
}

func TestProviderAccountConcurrentRetriesOfOneKey(t *testing.T) {
	env := nodetest.Start(t)
	prov := mustProvider(t, env, "Acme")
	const n = 10
	statuses := make([]int, n)
	bodies := make([][]byte, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			statuses[i], bodies[i] = rawDo(env, http.MethodPost, "/api/provider/accounts", env.SuperLogin, env.SuperPassword,
				accountBody(prov, "anna"), http.Header{"Idempotency-Key": {"same"}})
		})
	}
	wg.Wait()
	var answer []byte
	for i, s := range statuses {
		switch {
		case s == http.StatusConflict: // the first attempt was still running
		case s == http.StatusOK && answer == nil:
			answer = bodies[i]
		case s == http.StatusOK && !bytes.Equal(bodies[i], answer):
			t.Errorf("answers differ: %s and %s", bodies[i], answer)
		case s != http.StatusOK:
			t.Errorf("request %d: %d %s", i, s, bodies[i])
		}
	}
	if answer == nil {
		t.Fatal("no request succeeded")
	}
	if l := superClient(env).ok(t, http.MethodGet, "/accounts", nil); l.int(t, "total") != 1 {
		t.Fatalf("accounts: %v", l)
	}
}

func TestProviderAccountServicesAvailable(t *testing.T) {
	env := nodetest.Start(t)
	p := superClient(env)
	prov := mustProvider(t, env, "Acme")
	tariff := mustTariff(t, env, prov, "Basic")
	a := p.ok(t, http.MethodPost, "/accounts", accountBody(prov, "anna"))
	path := fmt.Sprintf("/accounts/%d", a.id(t))
	if a["services_available"] != false {
		t.Fatal("no subscription, yet services available")
	}
	sub := p.ok(t, http.MethodPost, "/account_subscriptions", map[string]any{
		"account": a.id(t), "tarif": tariff, "start": "2020-01-01T00:00:00+0000",
	})
	if got := p.ok(t, http.MethodGet, path, nil); got["services_available"] != true {
		t.Fatalf("active subscription: %v", got)
	}
	// Disabled: no services, enabled again: services.
	if got := p.ok(t, http.MethodPost, "/accounts", map[string]any{"id": a.id(t), "enabled": false}); got["services_available"] != false || got["enabled"] != false {
		t.Fatalf("disabled: %v", got)
	}
	if l := p.ok(t, http.MethodGet, "/accounts?enabled=0", nil); len(l.list(t)) != 1 {
		t.Fatalf("disabled list: %v", l)
	}
	if got := p.ok(t, http.MethodPut, path, map[string]any{"enabled": true}); got["services_available"] != true {
		t.Fatalf("enabled again: %v", got)
	}
	// Ended subscription: no services.
	p.ok(t, http.MethodPost, "/account_subscriptions", map[string]any{"id": sub.id(t), "stop": "2021-01-01T00:00:00Z"})
	if got := p.ok(t, http.MethodGet, path, nil); got["services_available"] != false {
		t.Fatalf("ended subscription: %v", got)
	}
}

// rawDo is a request that reports instead of failing the test, for use
// from many goroutines.
func rawDo(env *nodetest.Env, method, path, login, password string, body any, h http.Header) (int, []byte) {
	data, err := json.Marshal(body)
	if err != nil {
		return -1, []byte(err.Error())
	}
	req, err := http.NewRequest(method, env.URL+path, bytes.NewReader(data))
	if err != nil {
		return -1, []byte(err.Error())
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header[k] = v
	}
	req.SetBasicAuth(login, password)
	resp, err := env.Client.Do(req)
	if err != nil {
		return -1, []byte(err.Error())
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return -1, []byte(err.Error())
	}
	return resp.StatusCode, out
}
