package billing_test

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"tvsm/internal/adapters/billing"
	"tvsm/internal/adapters/billing/billingtest"
)

// The billing URLs that reached inside the operator's network, and their
// neighbours: each is refused by default, naming why.
func TestCheckURLRefusesInternalAddresses(t *testing.T) {
	refused := map[string]string{
		"http://169.254.169.254/latest/meta-data/": "link-local",
		"http://127.0.0.1:2379/":                   "loopback",
		"http://[::1]/":                            "loopback",
		"http://[::ffff:127.0.0.1]/":               "loopback",
		"http://0.0.0.0/":                          "unspecified",
		"http://[::]/":                             "unspecified",
		"http://0.1.2.3/":                          "private",
		"http://127.1/":                            "ambiguous form",
		"http://2130706433/":                       "ambiguous form",
		"http://0x7f.0.0.1/":                       "ambiguous form",
		"http://0177.0.0.1/":                       "ambiguous form",
		"http://metadata.google.internal/":         "cloud metadata service",
		"http://METADATA.google.internal./":        "cloud metadata service",
		"http://[fd00:ec2::254]/":                  "cloud metadata service",
		"http://100.100.100.200/":                  "cloud metadata service",
		"http://localhost:8080/":                   "local host",
		"http://billing.localhost/":                "local host",
		"http://10.1.2.3/":                         "private",
		"http://192.168.0.10/":                     "private",
		"http://172.16.0.1/":                       "private",
		"http://100.64.0.1/":                       "private",
		"http://[fd12::1]/":                        "private",
		"http://[fe80::1%25eth0]/":                 "link-local",
		"http://239.1.2.3/":                        "multicast",
	}
	var p billing.Policy
	for raw, why := range refused {
		err := p.CheckURL(raw)
		if !errors.Is(err, billing.ErrForbiddenAddress) || !strings.Contains(err.Error(), why) {
			t.Errorf("CheckURL(%q) = %v, want ErrForbiddenAddress saying %q", raw, err, why)
		}
	}
	for _, raw := range []string{"http://user:pass@billing.example/", "https://token@billing.example/"} {
		if err := p.CheckURL(raw); !errors.Is(err, billing.ErrUserInfo) {
			t.Errorf("CheckURL(%q) = %v, want ErrUserInfo", raw, err)
		}
	}
	for _, raw := range []string{"ftp://billing.example/", "billing.example", "http://"} {
		if err := p.CheckURL(raw); !errors.Is(err, billing.ErrBadBillingURL) {
			t.Errorf("CheckURL(%q) = %v, want ErrBadBillingURL", raw, err)
		}
	}
	for _, raw := range []string{
		"https://billing.example/op/", "http://203.0.113.7:8080/", "http://[2001:db8::7]/",
		"http://cafe.be/", "http://0x7f.example/", "http://1.2.3.4.example/",
	} {
		if err := p.CheckURL(raw); err != nil {
			t.Errorf("CheckURL(%q) = %v, want nil", raw, err)
		}
	}
}

// Allowed networks let their addresses through, whatever their kind; the
// others stay refused.
func TestPolicyAllowedNetworks(t *testing.T) {
	p := billing.Policy{Allowed: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.0/8")}}
	for _, raw := range []string{"http://10.1.2.3/", "http://127.0.0.1:9000/", "http://localhost:9000/", "http://[::ffff:10.0.0.1]/"} {
		if err := p.CheckURL(raw); err != nil {
			t.Errorf("CheckURL(%q) = %v, want allowed", raw, err)
		}
	}
	for _, raw := range []string{"http://192.168.1.1/", "http://169.254.169.254/", "http://[::1]/", "http://metadata.google.internal/"} {
		if err := p.CheckURL(raw); !errors.Is(err, billing.ErrForbiddenAddress) {
			t.Errorf("CheckURL(%q) = %v, want refused", raw, err)
		}
	}
}

// The check that holds is made on the address connected to, after name
// resolution: a host name that resolves to loopback is refused before a
// connection is made, and billing gets nothing.
func TestClientRefusesResolvedAddresses(t *testing.T) {
	srv := billingtest.Start(t, "tok", billingtest.Options{})
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	byName := "http://localhost:" + u.Port()
	c, err := billing.NewClient(billing.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, base := range []string{srv.URL, byName} {
		_, err := c.Do(context.Background(), billing.Request{BaseURL: base, Token: "tok", Method: http.MethodGet, Path: billing.RouteCabinet.Path})
		if !errors.Is(err, billing.ErrForbiddenAddress) || billing.Failure(err) != "forbidden_address" {
			t.Errorf("call to %s: %v, want ErrForbiddenAddress", base, err)
		}
	}
	if got := srv.Requests(); len(got) != 0 {
		t.Fatalf("billing received %d requests, want none", len(got))
	}
	// Allowed, the same calls go through.
	allowed := newClient(t, billing.Options{})
	for _, base := range []string{srv.URL, byName} {
		resp, err := allowed.Do(context.Background(), billing.Request{BaseURL: base, Token: "tok", Method: http.MethodGet, Path: billing.RouteCabinet.Path})
		if err != nil || resp.Status != http.StatusOK {
			t.Errorf("allowed call to %s: %+v, %v", base, resp, err)
		}
	}
}

// FuzzCheckURL: whatever the URL, CheckURL does not panic, and a URL it
// accepts has no user information and, when its host is an IP address, an
// address Check accepts.
func FuzzCheckURL(f *testing.F) {
	for _, seed := range []string{
		"http://169.254.169.254/", "http://127.1/", "http://2130706433/", "http://[::ffff:127.0.0.1]:80/",
		"http://user:pass@b.example/", "https://billing.example/op/", "http://[fe80::1%25eth0]/",
		"http://0x7f.0.0.1/", "http://METADATA.google.internal./", "http://localhost./",
	} {
		f.Add(seed)
	}
	var p billing.Policy
	f.Fuzz(func(t *testing.T, raw string) {
		if p.CheckURL(raw) != nil {
			return
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("accepted %q, which does not parse: %v", raw, err)
		}
		if u.User != nil {
			t.Fatalf("accepted %q with user information", raw)
		}
		if a, err := netip.ParseAddr(u.Hostname()); err == nil {
			if err := p.Check(a); err != nil {
				t.Fatalf("accepted %q whose address is refused: %v", raw, err)
			}
		}
	})
}
