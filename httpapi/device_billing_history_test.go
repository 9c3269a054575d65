package httpapi_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/httpapi"
	"tvsm/internal/adapters/billing"
	"tvsm/internal/adapters/billing/billingtest"
	"tvsm/internal/testkit/nodetest"
)

// TestBillingJournalInAccountHistory runs the proxy over a real node: the
// provider's billing settings come from the read model (set through the
// Admin API), calls are journaled into the embedded store, and they show in
// the account's history. The account stays readable and writable.
func TestBillingJournalInAccountHistory(t *testing.T) {
	env := nodetest.Start(t)
	bill := billingtest.Start(t, billingToken, billingtest.Options{Base: "/op"})
	status, body := env.Super(t, http.MethodPost, "/api/admin/providers", map[string]any{
		"name": "Acme", "billing": map[string]any{"resolve": true, "url": bill.BillingURL, "token": billingToken},
	})
	if status != http.StatusOK {
		t.Fatalf("create provider: %d %s", status, body)
	}
	provider := decodeObj(t, body).id(t)
	s := superClient(env)
	account := s.ok(t, http.MethodPost, "/accounts", accountBody(provider, "alice")).id(t)

	journal := billing.NewJournal(billing.StoreSink{Store: env.Store, Registry: env.Node.Registry}, billing.JournalOptions{})
	defer journal.Close(context.Background())
	client, err := billing.NewClient(billing.Options{Addresses: billing.Policy{Allowed: billingtest.LoopbackNetworks()}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	engine := httpapi.New(httpapi.Options{Logger: slog.New(slog.DiscardHandler)})
	httpapi.MountBilling(engine.Group("/api/device"), httpapi.BillingOptions{
		Enabled: true, Identity: testIdentity, Provider: env.Node.Model.Provider, Client: client, Journal: journal,
	})
	device := httptest.NewServer(engine)
	defer device.Close()

	ids := []string{"X-Test-Account", strconv.FormatInt(account, 10), "X-Test-Provider", strconv.FormatInt(provider, 10)}
	for _, call := range []struct{ method, path, body string }{
		{http.MethodGet, "/api/device/billing/cabinet", ""},
		{http.MethodPost, "/api/device/billing/subscribe", `{"tariff_id":3,"from":"2025-04-01T00:00:00+0300"}`},
	} {
		resp, err := http.DefaultClient.Do(deviceRequest(t, call.method, device.URL+call.path, strings.NewReader(call.body), ids...))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", call.path, resp.StatusCode)
		}
	}
	if got, _ := bill.Last(); got.Header.Get("X-TMS-ACCOUNT-ID") != strconv.FormatInt(account, 10) || !got.SignatureOK {
		t.Fatalf("billing got %v", got.Header)
	}

	path := fmt.Sprintf("/accounts/%d", account)
	var entries []obj
	deadline := time.Now().Add(5 * time.Second)
	for len(entries) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("history has %d entries, want 3; journal %+v", len(entries), journal.Stats())
		}
		time.Sleep(10 * time.Millisecond)
		entries = s.ok(t, http.MethodGet, path+"/history", nil).list(t)
	}
	summary := regexp.MustCompile(`^billing (GET /api/cabinet|POST /api/subscribe): 200 in \d+ ms$`)
	for i, e := range entries[1:] {
		if e.str(t, "type") != "BillingCalled.v1" || e.str(t, "actor") != "device:3" || !summary.MatchString(e.str(t, "summary")) {
			t.Errorf("entry %d: %v", i+1, e)
		}
		if _, err := parseDateTime(e.str(t, "time")); err != nil {
			t.Errorf("entry %d time: %v", i+1, err)
		}
		if changes, _ := e["changes"].([]any); len(changes) != 0 {
			t.Errorf("entry %d changes account fields: %v", i+1, changes)
		}
	}
	// The account's reads and writes are not disturbed by the journal.
	s.ok(t, http.MethodPost, "/accounts", map[string]any{"id": account, "fullname": "Alice B."})
	if got := s.ok(t, http.MethodGet, path, nil).str(t, "fullname"); got != "Alice B." {
		t.Errorf("fullname %q after update", got)
	}
	if st := journal.Stats(); st.Stored != 2 || st.Dropped != 0 || st.Failed != 0 {
		t.Errorf("journal stats %+v", st)
	}
	// The change feed shows the create and the update, not the journal: sync
	// jobs must not re-fetch an account for every billing call.
	var accountChanges []string
	for _, ch := range s.ok(t, http.MethodGet, "/changes?limit=0", nil).list(t) {
		if ch.str(t, "entity") == "account" {
			accountChanges = append(accountChanges, ch.str(t, "type"))
		}
	}
	if want := []string{domain.AccountCreatedType, domain.AccountUpdatedType}; strings.Join(accountChanges, ",") != strings.Join(want, ",") {
		t.Errorf("account changes in the feed %v, want %v", accountChanges, want)
	}
}
