package httpapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"tvsm/internal/testkit/nodetest"
)

func TestAdminCategoryRoundTrip(t *testing.T) {
	env := nodetest.Start(t)
	su := admSuper(env)

	created := su.ok(t, http.MethodPost, "/categories", map[string]any{"name": "News"})
	id := admID(t, created)
	admSame(t, created, `{"id":`+admItoa(id)+`,"name":"News"}`)
	admSame(t, su.ok(t, http.MethodGet, admPath("/categories", id), nil), `{"id":`+admItoa(id)+`,"name":"News"}`)
	admSame(t, su.ok(t, http.MethodPost, "/categories", map[string]any{"id": id, "name": "World news"}), `{"id":`+admItoa(id)+`,"name":"World news"}`)
	admSame(t, su.ok(t, http.MethodPut, admPath("/categories", id), map[string]any{"name": "Sport"}), `{"id":`+admItoa(id)+`,"name":"Sport"}`)
	admSame(t, su.ok(t, http.MethodPost, admPath("/categories", id), map[string]any{"name": "Kids"}), `{"id":`+admItoa(id)+`,"name":"Kids"}`)

	su.fail(t, 400, http.MethodPost, "/categories", map[string]any{}).wantField(t, "name")
	su.fail(t, 400, http.MethodPost, "/categories", map[string]any{"name": "\x01bell"}).wantField(t, "name")
	su.fail(t, 400, http.MethodPut, admPath("/categories", id), map[string]any{"name": " padded "}).wantField(t, "name")
	su.fail(t, 404, http.MethodGet, "/categories/999", nil)

	admSame(t, su.ok(t, http.MethodDelete, admPath("/categories", id), nil), `{"id":`+admItoa(id)+`,"name":"Kids"}`)
	su.fail(t, 404, http.MethodGet, admPath("/categories", id), nil)
	su.fail(t, 404, http.MethodPut, admPath("/categories", id), map[string]any{"name": "x"})
}

func TestAdminChannelRoundTrip(t *testing.T) {
	env := nodetest.Start(t)
	su := admSuper(env)
	news := admID(t, su.ok(t, http.MethodPost, "/categories", map[string]any{"name": "News"}))
	sport := admID(t, su.ok(t, http.MethodPost, "/categories", map[string]any{"name": "Sport"}))

	created := su.ok(t, http.MethodPost, "/channels", map[string]any{
		"name": "First", "number": "1", "logo_url": "https://cdn.example/1.png",
		"description": "The first one", "categories": []any{news, "2", news},
	})
	id := admID(t, created)
	want := `{"id":` + admItoa(id) + `,"name":"First","number":1,"logo_url":"https://cdn.example/1.png",
		"description":"The first one","categories":[` + admItoa(news) + `,` + admItoa(sport) + `],
		"text_name":null,"enabled":true,"time_shift_depth":null}`
	admSame(t, created, want)
	admSame(t, su.ok(t, http.MethodGet, admPath("/channels", id), nil), want)

	// Null clears the optional text; [] clears the categories.
	admSame(t, su.ok(t, http.MethodPut, admPath("/channels", id), map[string]any{"logo_url": nil, "description": nil, "categories": []int{}, "number": 7}),
		`{"id":`+admItoa(id)+`,"name":"First","number":7,"logo_url":null,"description":null,"categories":[],
			"text_name":null,"enabled":true,"time_shift_depth":null}`)
	// POST with id.
	updated := su.ok(t, http.MethodPost, "/channels", map[string]any{"id": id, "name": "Premier"})
	if updated["name"] != "Premier" || updated["number"] != float64(7) {
		t.Fatalf("POST update: %v", updated)
	}

	for _, tc := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"missing name", map[string]any{"number": 1}, "name"},
		{"number not an integer", map[string]any{"name": "x", "number": "one"}, "number"},
		{"number negative", map[string]any{"name": "x", "number": -1}, "number"},
		{"number too large", map[string]any{"name": "x", "number": 1_000_001}, "number"},
		{"bad logo url", map[string]any{"name": "x", "logo_url": "javascript:alert(1)"}, "logo_url"},
		{"categories not a list", map[string]any{"name": "x", "categories": 3}, "categories"},
		{"category not an integer", map[string]any{"name": "x", "categories": []any{"a"}}, "categories"},
		{"unknown category", map[string]any{"name": "x", "categories": []int64{news, 999}}, "categories"},
		{"category not positive", map[string]any{"name": "x", "categories": []int64{0}}, "categories"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			admNoEvents(t, env, tc.name, func() {
				su.fail(t, 400, http.MethodPost, "/channels", tc.body).wantField(t, tc.field)
			})
		})
	}
	su.fail(t, 400, http.MethodPut, admPath("/channels", id), map[string]any{"categories": []int64{999}, "name": ""}).wantField(t, "categories")

	// A category deleted after the channel listed it does not block a resync.
	su.ok(t, http.MethodPut, admPath("/channels", id), map[string]any{"categories": []int64{news}})
	su.ok(t, http.MethodDelete, admPath("/categories", news), nil)
	admNoEvents(t, env, "re-sending a deleted category", func() {
		su.ok(t, http.MethodPut, admPath("/channels", id), map[string]any{"categories": []int64{news}})
	})

	su.ok(t, http.MethodDelete, admPath("/channels", id), nil)
	su.fail(t, 404, http.MethodGet, admPath("/channels", id), nil)
}

func TestAdminTariffRoundTrip(t *testing.T) {
	env := nodetest.Start(t)
	su := admSuper(env)
	p := admProvider(t, env, "Acme")
	other := admProvider(t, env, "Other")
	ch1 := admID(t, su.ok(t, http.MethodPost, "/channels", map[string]any{"name": "One", "number": 1}))
	ch2 := admID(t, su.ok(t, http.MethodPost, "/channels", map[string]any{"name": "Two", "number": 2}))

	created := su.ok(t, http.MethodPost, "/tariffs", map[string]any{
		"provider": p, "name": "Basic", "enabled": 0, "channels": []int64{ch2, ch1}, "description": "Two channels",
	})
	id := admID(t, created)
	want := `{"id":` + admItoa(id) + `,"provider":` + admItoa(p) + `,"name":"Basic","enabled":false,
		"channels":[` + admItoa(ch2) + `,` + admItoa(ch1) + `],"description":"Two channels","tarif_tag":null}`
	admSame(t, created, want)
	admSame(t, su.ok(t, http.MethodGet, admPath("/tariffs", id), nil), want)

	admSame(t, su.ok(t, http.MethodPut, admPath("/tariffs", id), map[string]any{"enabled": true, "description": nil, "channels": []int64{ch1}, "provider": p}),
		`{"id":`+admItoa(id)+`,"provider":`+admItoa(p)+`,"name":"Basic","enabled":true,"channels":[`+admItoa(ch1)+`],"description":null,
			"tarif_tag":null}`)
	updated := su.ok(t, http.MethodPost, "/tariffs", map[string]any{"id": id, "name": "Basic+"})
	if updated["name"] != "Basic+" || updated["enabled"] != true {
		t.Fatalf("POST update: %v", updated)
	}

	for _, tc := range []struct {
		name   string
		method string
		path   string
		body   map[string]any
		field  string
	}{
		{"missing provider", http.MethodPost, "/tariffs", map[string]any{"name": "x"}, "provider"},
		{"unknown provider", http.MethodPost, "/tariffs", map[string]any{"provider": 999, "name": "x"}, "provider"},
		{"missing name", http.MethodPost, "/tariffs", map[string]any{"provider": p}, "name"},
		{"unknown channel", http.MethodPost, "/tariffs", map[string]any{"provider": p, "name": "x", "channels": []int64{ch1, 999}}, "channels"},
		{"description too long", http.MethodPost, "/tariffs", map[string]any{"provider": p, "name": "x", "description": strings.Repeat("d", 1001)}, "description"},
		{"provider changed", http.MethodPut, admPath("/tariffs", id), map[string]any{"provider": other}, "provider"},
		{"unknown channel on update", http.MethodPut, admPath("/tariffs", id), map[string]any{"channels": []int64{999}}, "channels"},
		{"enabled not a boolean", http.MethodPut, admPath("/tariffs", id), map[string]any{"enabled": 2}, "enabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			admNoEvents(t, env, tc.name, func() {
				su.fail(t, 400, tc.method, tc.path, tc.body).wantField(t, tc.field)
			})
		})
	}

	// Channels deleted after the tariff listed them do not block a resync.
	su.ok(t, http.MethodDelete, admPath("/channels", ch1), nil)
	admNoEvents(t, env, "re-sending a deleted channel", func() {
		su.ok(t, http.MethodPut, admPath("/tariffs", id), map[string]any{"channels": []int64{ch1}})
	})

	deleted := su.ok(t, http.MethodDelete, admPath("/tariffs", id), nil)
	if deleted["name"] != "Basic+" {
		t.Fatalf("DELETE answered %v", deleted)
	}
	su.fail(t, 404, http.MethodGet, admPath("/tariffs", id), nil)
	su.fail(t, 404, http.MethodDelete, admPath("/tariffs", id), nil)
}

func TestAdminLists(t *testing.T) {
	env := nodetest.Start(t)
	su := admSuper(env)
	var cats []int64
	for _, name := range []string{"e", "b", "d", "a", "c"} {
		cats = append(cats, admID(t, su.ok(t, http.MethodPost, "/categories", map[string]any{"name": name})))
	}

	l := su.list(t, "/categories")
	if l.Total != 5 || l.Start != 0 || l.Limit != 0 || !slices.Equal(l.ids(t), cats) {
		t.Fatalf("all: %+v", l)
	}
	l = su.list(t, "/categories?start=1&limit=2")
	if l.Total != 5 || l.Start != 1 || l.Limit != 2 || !slices.Equal(l.ids(t), cats[1:3]) {
		t.Fatalf("page: %+v", l)
	}
	l = su.list(t, "/categories?sort=-name&limit=2")
	if got := []any{l.Data[0]["name"], l.Data[1]["name"]}; got[0] != "e" || got[1] != "d" {
		t.Fatalf("sorted by name descending: %v", got)
	}
	l = su.list(t, "/categories?start=10")
	if l.Total != 5 || len(l.Data) != 0 {
		t.Fatalf("past the end: %+v", l)
	}
	su.fail(t, 400, http.MethodGet, "/categories?sort=color", nil).wantField(t, "sort")
	su.fail(t, 400, http.MethodGet, "/categories?start=-1", nil).wantField(t, "start")
	su.fail(t, 400, http.MethodGet, "/providers?enabled=perhaps", nil).wantField(t, "enabled")

	// Filters.
	p1 := admProvider(t, env, "One")
	p2 := admID(t, su.ok(t, http.MethodPost, "/providers", map[string]any{"name": "Two", "enabled": false}))
	if l := su.list(t, "/providers?enabled=0"); !slices.Equal(l.ids(t), []int64{p2}) {
		t.Fatalf("disabled providers: %v", l.ids(t))
	}
	if l := su.list(t, "/providers?sort=-id"); !slices.Equal(l.ids(t), []int64{p2, p1}) {
		t.Fatalf("providers by id descending: %v", l.ids(t))
	}
	t1 := admID(t, su.ok(t, http.MethodPost, "/tariffs", map[string]any{"provider": p1, "name": "A"}))
	t2 := admID(t, su.ok(t, http.MethodPost, "/tariffs", map[string]any{"provider": p2, "name": "B", "enabled": false}))
	if l := su.list(t, "/tariffs?provider="+admItoa(p2)); !slices.Equal(l.ids(t), []int64{t2}) {
		t.Fatalf("tariffs of p2: %v", l.ids(t))
	}
	if l := su.list(t, "/tariffs?enabled=true"); !slices.Equal(l.ids(t), []int64{t1}) {
		t.Fatalf("enabled tariffs: %v", l.ids(t))
	}
	ch := admID(t, su.ok(t, http.MethodPost, "/channels", map[string]any{"name": "C", "categories": []int64{cats[2]}}))
	su.ok(t, http.MethodPost, "/channels", map[string]any{"name": "D"})
	if l := su.list(t, "/channels?category="+admItoa(cats[2])); !slices.Equal(l.ids(t), []int64{ch}) || l.Total != 1 {
		t.Fatalf("channels of a category: %+v", l)
	}
	su.ok(t, http.MethodPost, "/admins", map[string]any{"login": "ops1", "password": "ops1-password", "provider": p1})
	su.ok(t, http.MethodPost, "/admins", map[string]any{"login": "ops2", "password": "ops2-password", "provider": p2})
	l = su.list(t, "/admins?provider="+admItoa(p2))
	if l.Total != 1 || l.Data[0]["login"] != "ops2" {
		t.Fatalf("admins of p2: %+v", l)
	}
	l = su.list(t, "/admins?sort=-login")
	if l.Total != 3 || l.Data[0]["login"] != "root" || l.Data[2]["login"] != "ops1" {
		t.Fatalf("admins by login descending: %+v", l)
	}
}
