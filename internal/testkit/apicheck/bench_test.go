package apicheck_test

import (
	"encoding/json"
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
	checkedEnv := *env // the same node, reached through the checked server
	checkedEnv.URL = checked.URL
	for _, path := range []string{"/api/provider/accounts/1", "/api/provider/accounts?limit=50"} {
		for _, e := range []struct {
			name string
			env  *nodetest.Env
		}{{"plain", env}, {"checked", &checkedEnv}} {
			b.Run(path+"/"+e.name, func(b *testing.B) {
				for b.Loop() {
					if status, body := e.env.Super(b, http.MethodGet, path, nil); status != http.StatusOK {
						b.Fatalf("%s: %d %s", path, status, body)
					}
				}
			})
		}
	}
	if errs := tb.recorded(); len(errs) > 0 {
		b.Fatalf("checked answers failed: %v", errs[0])
	}
}
