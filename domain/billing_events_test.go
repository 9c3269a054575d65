package domain_test

import (
	"reflect"
	"testing"

	"tvsm/domain"
)

var billingCall = domain.BillingCalled{AccountID: 42, Provider: 7, DeviceID: 1, Route: "cabinet", Method: "GET", Path: "/api/cabinet", Status: 200, LatencyMS: 35}

// TestBillingCalledChangesNoAccountField: the journal entry lives in the
// account's stream, but the account aggregate passes over it, and the
// history shows it as a line without field changes.
func TestBillingCalledChangesNoAccountField(t *testing.T) {
	d := domain.AccountDecider()
	before := d.Replay(created, device1)
	after := d.Evolve(before, billingCall)
	if !reflect.DeepEqual(before, after) {
		t.Errorf("Evolve changed the account:\nbefore %+v\nafter  %+v", before, after)
	}
	if diff := before.Diff(billingCall); diff != nil {
		t.Errorf("Diff = %v, want none", diff)
	}
	if got := domain.SummarizeAccountEvent(billingCall); got != "billing GET /api/cabinet: 200 in 35 ms" {
		t.Errorf("summary %q", got)
	}
	failed := domain.BillingCalled{AccountID: 42, Method: "POST", Path: "/api/switch", Status: 504, LatencyMS: 10000, Failure: "timeout"}
	if got := domain.SummarizeAccountEvent(failed); got != "billing POST /api/switch: 504 (timeout) in 10000 ms" {
		t.Errorf("summary %q", got)
	}
	// An account whose stream starts with a stray journal entry does not
	// exist until it is created.
	if s := d.Replay(billingCall); s.Exists() {
		t.Errorf("a journal entry created an account: %+v", s)
	}
}
