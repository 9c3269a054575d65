package httpapi_test

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"

	"tvsm/domain"
	"tvsm/internal/testkit/nodetest"
)

// feed reads the whole change feed after pos in pages of limit, checking
// the paging, and returns the entries and the final position.
func feed(t *testing.T, c papi, after string, limit int) ([]obj, string) {
	t.Helper()
	var all []obj
	for range 1000 {
		page := c.ok(t, http.MethodGet, fmt.Sprintf("/changes?after=%s&limit=%d", after, limit), nil)
		entries := page.list(t)
		next := page.str(t, "next")
		if len(entries) > limit {
			t.Fatalf("page of %d entries, limit %d", len(entries), limit)
		}
		if len(entries) == 0 {
			// next may move past events the caller does not see.
			if a, _ := strconv.ParseUint(after, 10, 64); mustUint(t, next) < a {
				t.Fatalf("empty page moved next back from %s to %s", after, next)
			}
			return all, next
		}
		if last := entries[len(entries)-1].str(t, "position"); next != last && len(entries) == limit {
			t.Fatalf("full page: next %s, last position %s", next, last)
		}
		all = append(all, entries...)
		after = next
	}
	t.Fatal("feed does not end")
	return nil, ""
}

func TestProviderChangeFeed(t *testing.T) {
	env := nodetest.Start(t)
	p := superClient(env)
	acme := mustProvider(t, env, "Acme")
	tariff := mustTariff(t, env, acme, "Basic")
	a := p.ok(t, http.MethodPost, "/accounts", accountBody(acme, "anna")).id(t)
	sub := p.ok(t, http.MethodPost, "/account_subscriptions", map[string]any{"account": a, "start": "2026-01-01T00:00:00Z", "tarif": tariff}).id(t)
	dev := bindDevice(t, env, a, "MAC-1")
	p.ok(t, http.MethodPut, fmt.Sprintf("/accounts/%d", a), map[string]any{"fullname": "Anna K."})
	other := mustProvider(t, env, "Other")
	b := p.ok(t, http.MethodPost, "/accounts", accountBody(other, "boris")).id(t)
	p.ok(t, http.MethodDelete, fmt.Sprintf("/accounts/%d", a), nil)

	type entry struct {
		entity string
		id     int64
		typ    string
	}
	summary := func(entries []obj) []entry {
		var out []entry
		for _, e := range entries {
			out = append(out, entry{e.str(t, "entity"), e.id(t), e.str(t, "type")})
		}
		return out
	}
	want := []entry{
		{"provider", acme, "ProviderCreated.v1"},
		{"tariff", tariff, "TariffCreated.v1"},
		{"account", a, domain.AccountCreatedType},
		{"subscription", sub, "SubscriptionAdded.v1"},
		{"device", dev, "DeviceBound.v1"},
		{"account", a, domain.AccountUpdatedType},
		{"provider", other, "ProviderCreated.v1"},
		{"account", b, domain.AccountCreatedType},
		{"account", a, "AccountDeleted.v1"},
	}
	for _, limit := range []int{1, 2, 4, 100} {
		all, next := feed(t, p, "", limit)
		if got := summary(all); !slices.Equal(got, want) {
			t.Fatalf("limit %d: %v\nwant %v", limit, got, want)
		}
		var prev uint64
		for _, e := range all {
			pos, err := strconv.ParseUint(e.str(t, "position"), 10, 64)
			if err != nil || pos <= prev {
				t.Fatalf("position %q after %d", e.str(t, "position"), prev)
			}
			prev = pos
			if _, err := parseDateTime(e.str(t, "time")); err != nil {
				t.Fatal(err)
			}
		}
		if all[3].int(t, "account") != a || all[4].int(t, "account") != a {
			t.Fatalf("items without their account: %v %v", all[3], all[4])
		}
		if _, ok := all[2]["account"]; ok {
			t.Fatalf("account entry with an account field: %v", all[2])
		}
		// Caught up: an empty page, next stays.
		page := p.ok(t, http.MethodGet, "/changes?after="+next, nil)
		if len(page.list(t)) != 0 || page.str(t, "next") != next {
			t.Fatalf("caught up: %v", page)
		}
	}

	// Resuming in the middle gives the rest; a change after it shows next.
	all, next := feed(t, p, "", 100)
	rest, _ := feed(t, p, all[5].str(t, "position"), 100)
	if got := summary(rest); !slices.Equal(got, want[6:]) {
		t.Fatalf("rest %v", got)
	}
	p.ok(t, http.MethodPut, fmt.Sprintf("/accounts/%d", b), map[string]any{"enabled": false})
	more, _ := feed(t, p, next, 100)
	if got := summary(more); !slices.Equal(got, []entry{{"account", b, domain.AccountUpdatedType}}) {
		t.Fatalf("new change %v", got)
	}

	// A provider-scoped admin sees its provider, tariffs, accounts (even
	// deleted ones) and their items only.
	s := scopedClient(t, env, "acme-admin", acme)
	mine, _ := feed(t, s, "0", 3)
	if got := summary(mine); !slices.Equal(got, append(want[:6:6], want[8])) {
		t.Fatalf("scoped feed %v", got)
	}

	for _, tc := range []struct{ query, field string }{
		{"?after=abc", "after"},
		{"?after=-1", "after"},
		{"?after=1/x", "after"},
		{"?limit=x", "limit"},
		{"?limit=1.5", "limit"},
	} {
		p.fails(t, http.StatusBadRequest, http.MethodGet, "/changes"+tc.query, nil).field(t, tc.field)
	}
	// Out-of-range limits are clamped: 0 means the default.
	if got := p.ok(t, http.MethodGet, "/changes?limit=0", nil).list(t); len(got) != len(want)+1 {
		t.Fatalf("limit=0: %d entries", len(got))
	}
	if got := p.ok(t, http.MethodGet, "/changes?limit=5000", nil).list(t); len(got) != len(want)+1 {
		t.Fatalf("limit=5000: %d entries", len(got))
	}
	status, _ := env.Do(t, http.MethodGet, "/api/provider/changes", "", "", nil)
	if status != http.StatusUnauthorized {
		t.Fatalf("no credentials: %d", status)
	}
	// A position far ahead: nothing, promptly.
	page := p.ok(t, http.MethodGet, "/changes?after=99999999", nil)
	if len(page.list(t)) != 0 {
		t.Fatalf("far ahead: %v", page)
	}
}

func mustUint(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("position %q: %v", s, err)
	}
	return n
}
