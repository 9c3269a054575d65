package apicheck_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"tvsm/internal/testkit/apicheck"
	"tvsm/internal/testkit/nodetest"
)

// BenchmarkServe prices the checking: an account read from a real node
// over loopback HTTP, unchecked (plain) and checked (checked: the wrapped
// handler every black-box test gets), and a list of 50 accounts the same
// two ways. Compare checked with plain in the same run.
func BenchmarkServe(b *testing.B) {
	env := nodetest.Start(b) // a benchmark's node is not checked
	var prov struct{ ID int64 }
	if status, body := env.Super(b, http.MethodPost, "/api/admin/providers", map[string]any{"name": "Bench"}); status != 200 {
		b.Fatalf("provider: %d %s", status, body)
	} else if err := json.Unmarshal(body, &prov); err != nil {
		b.Fatal(err)
	}
	for i := range 50 {
		status, body := env.Super(b, http.MethodPost, "/api/provider/accounts", map[string]any{
			"provider": prov.ID, "login": "bench-" + strconv.Itoa(i), "fullname": "Bench", "pin_md5": "81dc9bdb52d04dc20036dbd8313ed055",
		})
		if status != 200 {
			b.Fatalf("account: %d %s", status, body)
		}
	}
	tb := &recordingTB{TB: b}
	checked := httptest.NewServer(apicheck.Handler(tb, env.Node.Handler()))
	defer checked.Close()
	for _, path := range []string{"/api/provider/accounts/1", "/api/provider/accounts?limit=50"} {
		for _, srv := range []struct{ name, url string }{{"plain", env.URL}, {"checked", checked.URL}} {
			b.Run(path+"/"+srv.name, func(b *testing.B) {
				for b.Loop() {
					req, _ := http.NewRequest(http.MethodGet, srv.url+path, nil)
					req.SetBasicAuth(env.SuperLogin, env.SuperPassword)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Fatalf("%s: %d", path, resp.StatusCode)
					}
				}
			})
		}
	}
	if errs := tb.recorded(); len(errs) > 0 {
		b.Fatalf("checked answers failed: %v", errs[0])
	}
}
