package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"tvsm/internal/adapters/billing/billingtest"
)

func TestBillingCheckConforming(t *testing.T) {
	isolateEnv(t)
	srv := billingtest.Start(t, "s3cret", billingtest.Options{Base: "/op"})
	t.Setenv(billingTokenEnv, "s3cret")
	code, stdout, stderr := runCapture(t, "billing-check", srv.BillingURL, "--billing-allowed-networks", "127.0.0.0/8", "--account", "42", "--provider", "7", "--header-prefix", "X-TVIP-")
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"GET /api/cabinet: 200 in ", "GET /api/tariff/3: 200 in ",
		"GET /api/cabinet (with a wrong X-AUTH-TOKEN): 401 in ", "5 calls, 0 errors, 0 warnings"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	got, _ := srv.Last()
	if got.Header.Get("X-TVIP-ACCOUNT-ID") != "42" || got.Header.Get("X-TVIP-PROVIDER-ID") != "7" {
		t.Errorf("headers %v", got.Header)
	}
	if srv.Requests()[0].SignatureOK != true {
		t.Error("billing-check signs differently from the proxy")
	}
}

// As the proxy, billing-check refuses billing on this host unless its
// network is allowed; billing gets nothing.
func TestBillingCheckRefusesLoopbackByDefault(t *testing.T) {
	isolateEnv(t)
	srv := billingtest.Start(t, "s3cret", billingtest.Options{})
	code, _, stderr := runCapture(t, "billing-check", srv.URL, "--token", "s3cret")
	if code != exitUsage || !strings.Contains(stderr, "127.0.0.1 is loopback") {
		t.Fatalf("exit %d, stderr:\n%s\nwant %d naming the loopback address", code, stderr, exitUsage)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("billing got %d requests", n)
	}
	code, _, stderr = runCapture(t, "billing-check", srv.URL, "--token", "s3cret", "--billing-allowed-networks", "10.0.0.0/33")
	if code != exitUsage || !strings.Contains(stderr, "is not a CIDR network") {
		t.Fatalf("bad networks: exit %d, stderr:\n%s", code, stderr)
	}
}

func TestBillingCheckDeviations(t *testing.T) {
	isolateEnv(t)
	cabinet := strings.Replace(billingtest.Cabinet, `"contacts":"Support: +1 555 0100",`, ``, 1)
	srv := billingtest.Start(t, "s3cret", billingtest.Options{Handler: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/cabinet" {
			_, _ = io.WriteString(w, cabinet)
			return
		}
		_, _ = io.WriteString(w, strings.Replace(billingtest.TariffDetail(strings.TrimPrefix(r.URL.Path, "/api/tariff/")), `"#1A237E"`, `"#FAFAFA"`, 1))
	}})
	code, stdout, stderr := runCapture(t, "billing-check", "--token", "s3cret", srv.URL, "--max-tariffs", "1", "--billing-allowed-networks", "127.0.0.1")
	if code != exitFailure {
		t.Errorf("exit %d, want %d", code, exitFailure)
	}
	for _, want := range []string{
		"  error   $.contacts: required\n",
		"  warning $: 2 more tariffs not fetched (limit 1)\n",
		`  warning $.tariff.background_color: "#FAFAFA" is very light`,
		"  error   X-AUTH-TOKEN: a call with a wrong signature was answered 200",
		"3 calls, 2 errors, 2 warnings\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "billing does not conform: 2 of 3 calls failed the check") {
		t.Errorf("stderr: %s", stderr)
	}
}

func TestBillingCheckStrictAndUnreachable(t *testing.T) {
	isolateEnv(t)
	srv := billingtest.Start(t, "s3cret", billingtest.Options{Handler: func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-AUTH-TOKEN") != billingtest.Signature(r.URL.Path, "s3cret", "") {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if id, ok := strings.CutPrefix(r.URL.Path, "/api/tariff/"); ok {
			_, _ = io.WriteString(w, billingtest.TariffDetail(id))
			return
		}
		_, _ = io.WriteString(w, strings.Replace(billingtest.Cabinet, `"balance":"120.50",`, ``, 1))
	}})
	t.Setenv(billingNetworksEnv, "127.0.0.0/8")
	code, stdout, _ := runCapture(t, "billing-check", srv.URL, "--token", "s3cret")
	if code != exitOK || !strings.Contains(stdout, "warning $.account.balance: missing; send null when unused") {
		t.Errorf("warnings only: exit %d\n%s", code, stdout)
	}
	if code, _, _ := runCapture(t, "billing-check", srv.URL, "--token", "s3cret", "--strict"); code != exitFailure {
		t.Errorf("-strict with a warning: exit %d", code)
	}
	srv.Close()
	code, stdout, _ = runCapture(t, "billing-check", srv.URL, "--token", "s3cret")
	if code != exitFailure || !strings.Contains(stdout, "GET /api/cabinet: no answer: billing unreachable") {
		t.Errorf("dead billing: exit %d\n%s", code, stdout)
	}
}

func TestBillingCheckCommandLine(t *testing.T) {
	isolateEnv(t)
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"billing-check"}, exitUsage, "missing URL"},
		{[]string{"billing-check", "http://b.example"}, exitUsage, "no shared token: pass -token or set TVSM_BILLING_TOKEN"},
		{[]string{"billing-check", "ftp://b.example", "--token", "t"}, exitUsage, "not an absolute http or https URL"},
		{[]string{"billing-check", "http://b.example", "extra", "--token", "t"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"billing-check", "--frob", "http://b.example"}, exitUsage, "flag provided but not defined: -frob"},
		{[]string{"billing-check", "http://b.example", "--token", "t", "--header-prefix", "X Y"}, exitUsage, "header prefix"},
		{[]string{"billing-check", "-h"}, exitOK, "Usage: tvsm billing-check URL [flags]"},
	}
	for _, tt := range tests {
		code, _, stderr := runCapture(t, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.stderr) {
			t.Errorf("%q: exit %d, stderr:\n%s\nwant exit %d and %q", tt.args, code, stderr, tt.code, tt.stderr)
		}
	}
}
