package node_test

import (
	"bytes"
	"context"
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
