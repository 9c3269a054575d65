package httpapi_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"tvsm/internal/testkit/nodetest"
)

// Small leaks: an over-long Idempotency-Key is refused naming the header,
// not the key's record stream; a body with a repeated member is refused
// naming it, and nothing is appended; negative paging is refused.
func TestSmallLeaksAreRefused(t *testing.T) {
	env := nodetest.Start(t)
	p := superClient(env)
	prov := mustProvider(t, env, "Acme")

	status, body := p.doHeader(t, http.MethodPost, "/accounts", accountBody(prov, "keyed"),
		http.Header{"Idempotency-Key": {strings.Repeat("k", 300)}})
	if status != http.StatusBadRequest || !strings.Contains(string(body), "Idempotency-Key: longer than") ||
		strings.Contains(string(body), "idem-") || strings.Contains(string(body), "app:") {
		t.Errorf("an over-long Idempotency-Key: %d %s", status, body)
	}

	before := head(t, env)
	repeated := `{"provider":` + strconv.FormatInt(prov, 10) + `,"login":"first","pin_md5":"","fullname":"F","login":"second"}`
	if got := p.fails(t, http.StatusBadRequest, http.MethodPost, "/accounts", repeated).field(t, "login"); got != "appears more than once in its object" {
		t.Errorf("a repeated login: %q", got)
	}
	if after := head(t, env); after != before {
		t.Errorf("a refused body appended: head %v, was %v", after, before)
	}

	for _, q := range []string{"?limit=-1", "?limit=-50&start=0"} {
		if got := p.fails(t, http.StatusBadRequest, http.MethodGet, "/accounts"+q, nil).field(t, "limit"); !strings.Contains(got, "non-negative") {
			t.Errorf("%s: %q", q, got)
		}
	}
	p.ok(t, http.MethodGet, "/accounts?limit=0", nil) // zero still lists every row
}
