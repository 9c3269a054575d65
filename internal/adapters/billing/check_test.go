package billing_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"tvsm/internal/adapters/billing"
	"tvsm/internal/adapters/billing/billingtest"
)

func TestCheckConformingBilling(t *testing.T) {
	srv := billingtest.Start(t, "tok", billingtest.Options{Base: "/b"})
	c := newClient(t, billing.Options{})
	calls := billing.Check(context.Background(), c, billing.CheckTarget{BaseURL: srv.BillingURL, Token: "tok", Account: 1, Provider: 2}, billing.CheckOptions{})
	var paths []string
	for _, call := range calls {
		paths = append(paths, call.Path+call.Note)
		if call.Failed(true) {
			t.Errorf("%s %s: %v %v", call.Method, call.Path, call.Err, call.Deviations)
		}
	}
	want := "/api/cabinet /api/tariff/2 /api/tariff/1 /api/tariff/3 /api/cabinetwith a wrong X-AUTH-TOKEN"
	if strings.Join(paths, " ") != want {
		t.Errorf("calls %q\nwant  %q", paths, want)
	}
	for i, r := range srv.Requests() {
		if r.Method != http.MethodGet {
			t.Errorf("billing-check changed something: %s %s", r.Method, r.Path)
		}
		if r.SignatureOK != (i < len(calls)-1) {
			t.Errorf("request %d %s: signature ok %v", i, r.Path, r.SignatureOK)
		}
	}
}

// TestCheckSloppyBilling: a billing that accepts any signature, answers
// tariff 1 for every id, and has an old tariff model.
func TestCheckSloppyBilling(t *testing.T) {
	old := strings.ReplaceAll(billingtest.Cabinet, `"tms_id"`, `"prepaid":false,"old_id"`)
	srv := billingtest.Start(t, "tok", billingtest.Options{Handler: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		if r.URL.Path == "/api/cabinet" {
			_, _ = io.WriteString(w, old)
			return
		}
		_, _ = io.WriteString(w, billingtest.TariffDetail("1"))
	}})
	c := newClient(t, billing.Options{})
	calls := billing.Check(context.Background(), c, billing.CheckTarget{BaseURL: srv.URL, Token: "tok"}, billing.CheckOptions{MaxTariffs: 2})
	var found []string
	for _, call := range calls {
		for _, d := range call.Deviations {
			found = append(found, call.Path+" "+d.String())
		}
	}
	all := strings.Join(found, "\n")
	for _, want := range []string{
		"/api/cabinet warning Content-Type",
		"/api/cabinet error $.services[0].groups[0].offers[0].tariff.tms_id: required",
		"/api/cabinet warning $.services[0].groups[0].offers[0].tariff.prepaid: removed",
		"/api/cabinet warning $: 1 more tariffs not fetched (limit 2)",
		"/api/tariff/2 error $.tariff.id: 1, but tariff 2 was asked for",
		"/api/cabinet error X-AUTH-TOKEN: a call with a wrong signature was answered 200",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("missing %q in\n%s", want, all)
		}
	}
}

func TestCheckFailingBilling(t *testing.T) {
	srv := billingtest.Start(t, "tok", billingtest.Options{Handler: func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}})
	c := newClient(t, billing.Options{})
	calls := billing.Check(context.Background(), c, billing.CheckTarget{BaseURL: srv.URL, Token: "tok"}, billing.CheckOptions{})
	if len(calls) != 2 || len(calls[0].Deviations) != 1 || calls[0].Deviations[0].Path != "HTTP status" || calls[1].Failed(true) {
		t.Errorf("calls %+v", calls)
	}
	calls = billing.Check(context.Background(), c, billing.CheckTarget{BaseURL: deadURL(t), Token: "tok"}, billing.CheckOptions{})
	if len(calls) != 2 || calls[0].Err == nil || !calls[0].Failed(false) {
		t.Errorf("dead billing: %+v", calls)
	}
}
