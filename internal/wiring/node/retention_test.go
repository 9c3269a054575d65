package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/testkit/testutil"
)

// Given an account deleted 100 days ago, one deleted 10 days ago and one
// live, retention of 30 days erases the first only, and running it again
// erases nothing.
func TestRetentionErasesAccountsDeletedLongAgo(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	env := nodetest.StartWith(t, nodetest.Options{Clock: clock.Now})
	provider := decodeID(t, superOK(t, env, http.MethodPost, "/api/admin/providers", map[string]any{"name": "Retention"}))
	ids := writeAccounts(t, env, provider, "kept", 3)
	old, recent, live := ids["kept-0"], ids["kept-1"], ids["kept-2"]
	superOK(t, env, http.MethodDelete, "/api/provider/accounts/"+itoa(old), nil)
	clock.Advance(90 * 24 * time.Hour)
	superOK(t, env, http.MethodDelete, "/api/provider/accounts/"+itoa(recent), nil)
	clock.Advance(10 * 24 * time.Hour)

	erased, err := env.Node.EraseDeletedBefore(context.Background(), clock.Now().Add(-30*24*time.Hour))
	if err != nil || erased != 1 {
		t.Fatalf("retention erased %d, %v; want 1", erased, err)
	}
	history := func(id int64) []byte {
		return superOK(t, env, http.MethodGet, "/api/provider/accounts/"+itoa(id)+"/history", nil)
	}
	if h := history(old); !bytes.Contains(h, []byte("account erased")) || bytes.Contains(h, []byte("kept-0")) {
		t.Errorf("history of the account deleted 100 days ago: %s", h)
	}
	if h := history(recent); bytes.Contains(h, []byte("account erased")) || !bytes.Contains(h, []byte("kept-1")) {
		t.Errorf("history of the account deleted 10 days ago: %s", h)
	}
	superOK(t, env, http.MethodGet, "/api/provider/accounts/"+itoa(live), nil)
	if again, err := env.Node.EraseDeletedBefore(context.Background(), clock.Now().Add(-30*24*time.Hour)); err != nil || again != 0 {
		t.Fatalf("second run erased %d, %v; want 0", again, err)
	}
}

// Statistics of closed days keep their counts when an account that counted
// in them is erased: they hold ids, tariffs and devices, nothing personal,
// and the account's contract is joined from the read model (an erased
// account's is gone).
func TestErasureKeepsPastStatistics(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	env := nodetest.StartWith(t, nodetest.Options{Clock: clock.Now})
	viewingDays(t, env, clock, 3)
	env.Node.StatsScheduler.CloseDue()
	waitStats(t, env)
	const subscriptions = "/api/stats/subscription?from=2026-02-01&to=2026-03-31"
	const accounts = "/api/stats/account?from=2026-02-01&to=2026-03-31"
	before, beforeAccounts := superOK(t, env, http.MethodGet, subscriptions, nil), superOK(t, env, http.MethodGet, accounts, nil)
	if !bytes.Contains(before, []byte(`"enabled_count"`)) || !bytes.Contains(beforeAccounts, []byte(`"account_id":1`)) {
		t.Fatalf("no closed day with account 1 in the statistics: %s\n%s", before, beforeAccounts)
	}
	superOK(t, env, http.MethodPost, "/api/provider/accounts/1/erase?force=true", nil)
	waitStats(t, env)
	// Every day closed before the erasure answers as it did (the
	// erasure's own event may close one more day).
	days := func(body []byte) map[string]string {
		t.Helper()
		var v struct {
			ProviderStat []struct {
				SubscriptionsStat []struct {
					Date          string
					Subscriptions json.RawMessage
				} `json:"subscriptions_stat"`
			} `json:"provider_stat"`
		}
		if err := json.Unmarshal(body, &v); err != nil || len(v.ProviderStat) != 1 {
			t.Fatalf("subscription statistics: %s (%v)", body, err)
		}
		out := map[string]string{}
		for _, d := range v.ProviderStat[0].SubscriptionsStat {
			out[d.Date] = string(d.Subscriptions)
		}
		return out
	}
	was, now := days(before), days(superOK(t, env, http.MethodGet, subscriptions, nil))
	for day, counts := range was {
		if now[day] != counts {
			t.Errorf("subscription statistics of %s changed with an erasure: %s, before %s", day, now[day], counts)
		}
	}
	after := superOK(t, env, http.MethodGet, accounts, nil)
	if !bytes.Contains(after, []byte(`"account_id":1`)) {
		t.Errorf("the erased account's viewing left the statistics: %s", after)
	}
}
