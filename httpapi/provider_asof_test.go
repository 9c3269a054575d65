package httpapi_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/testkit/testutil"
)

// TestAsOf: account and subscription reads with ?as_of= answer as the log
// stood at that time: before the account existed (404), after each change,
// after it was deleted; lists filter and count as they did then.
func TestAsOf(t *testing.T) {
	t0 := time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)
	clock := testutil.NewClock(t0)
	env := nodetest.StartWith(t, nodetest.Options{Clock: clock.Now})
	p := superClient(env)
	prov := mustProvider(t, env, "Then ISP")
	tariff := mustTariff(t, env, prov, "Basic")
	at := func(d time.Duration) string { return t0.Add(d).Format("2006-01-02T15:04:05-0700") }

	clock.Advance(time.Hour) // t0+1h: anna created
	anna := p.ok(t, http.MethodPost, "/accounts", accountBody(prov, "anna")).id(t)
	clock.Advance(time.Hour) // t0+2h: renamed and disabled; bob created
	p.ok(t, http.MethodPut, fmt.Sprintf("/accounts/%d", anna), map[string]any{"fullname": "Anna K.", "enabled": false})
	bob := p.ok(t, http.MethodPost, "/accounts", accountBody(prov, "bob")).id(t)
	clock.Advance(time.Hour) // t0+3h: a subscription
	sub := p.ok(t, http.MethodPost, "/account_subscriptions", map[string]any{"account": anna, "tarif": tariff, "start": at(-24 * time.Hour)}).id(t)
	clock.Advance(time.Hour) // t0+4h: anna deleted
	p.ok(t, http.MethodDelete, fmt.Sprintf("/accounts/%d", anna), nil)

	path := fmt.Sprintf("/accounts/%d", anna)
	p.fails(t, http.StatusNotFound, http.MethodGet, path+"?as_of="+at(30*time.Minute), nil)
	// The offset's + escaped, as it should be, or not (read as a space).
	then := p.ok(t, http.MethodGet, path+"?as_of="+url.QueryEscape(at(90*time.Minute)), nil)
	if then.str(t, "fullname") != "Subscriber anna" || then["enabled"] != true || then["last_online"] != nil {
		t.Fatalf("anna at +1h30: %v", then)
	}
	if then.int(t, "created") != t0.Add(time.Hour).Unix() || then.int(t, "updated") != t0.Add(time.Hour).Unix() {
		t.Fatalf("anna's times at +1h30: %v", then)
	}
	later := p.ok(t, http.MethodGet, path+"?as_of="+at(150*time.Minute), nil)
	if later.str(t, "fullname") != "Anna K." || later["enabled"] != false || later.int(t, "updated") != t0.Add(2*time.Hour).Unix() {
		t.Fatalf("anna at +2h30: %v", later)
	}
	if got := p.ok(t, http.MethodGet, path+"?as_of="+at(210*time.Minute), nil); got["services_available"] != false {
		t.Fatalf("a disabled account has no services: %v", got)
	}
	p.fails(t, http.StatusNotFound, http.MethodGet, path, nil) // deleted now
	p.fails(t, http.StatusNotFound, http.MethodGet, path+"?as_of="+at(5*time.Hour), nil)

	// Lists: who existed then, with the filters as they applied then.
	list := func(q string) []int64 {
		t.Helper()
		return ids(t, p.ok(t, http.MethodGet, fmt.Sprintf("/accounts?provider=%d&%s", prov, q), nil).list(t))
	}
	for q, want := range map[string][]int64{
		"as_of=" + at(90*time.Minute):                  {anna},
		"as_of=" + at(150*time.Minute):                 {anna, bob},
		"as_of=" + at(150*time.Minute) + "&enabled=1":  {bob},
		"as_of=" + at(90*time.Minute) + "&enabled=1":   {anna},
		"as_of=" + at(150*time.Minute) + "&sort=-id":   {bob, anna},
		"as_of=" + at(5*time.Hour):                     {bob},
		"as_of=" + at(150*time.Minute) + "&login=anna": {anna},
	} {
		if got := list(q); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("accounts %s: %v, want %v", q, got, want)
		}
	}

	// Subscriptions as of a time: of one account.
	subs := func(q string) []int64 {
		t.Helper()
		return ids(t, p.ok(t, http.MethodGet, fmt.Sprintf("/account_subscriptions?account=%d&%s", anna, q), nil).list(t))
	}
	if got := subs("as_of=" + at(150*time.Minute)); len(got) != 0 {
		t.Errorf("subscriptions before the subscription: %v", got)
	}
	if got := subs("as_of=" + at(210*time.Minute)); fmt.Sprint(got) != fmt.Sprint([]int64{sub}) {
		t.Errorf("subscriptions at +3h30: %v, want [%d]", got, sub)
	}
	p.fails(t, http.StatusBadRequest, http.MethodGet, "/account_subscriptions?as_of="+at(time.Hour), nil).field(t, "as_of")
	p.fails(t, http.StatusBadRequest, http.MethodGet, "/accounts?as_of=yesterday", nil).field(t, "as_of")

	// Scope: another provider's admin cannot read them as of any time.
	other := scopedClient(t, env, "other-ops", mustProvider(t, env, "Other"))
	other.fails(t, http.StatusForbidden, http.MethodGet, path+"?as_of="+at(90*time.Minute), nil)
	if got := ids(t, other.ok(t, http.MethodGet, "/accounts?as_of="+at(150*time.Minute), nil).list(t)); len(got) != 0 {
		t.Errorf("another provider's admin lists %v", got)
	}
}
