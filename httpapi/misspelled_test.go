package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"tvsm/internal/testkit/nodetest"
)

// Given a body whose key is a misspelling of a required field, when the
// write fails for the missing field, then the 400 names the unknown key and
// the field it nearly spells; unknown keys still pass silently when nothing
// fails (the API stays as lenient as the original), and keys that spell no
// failed field are not named.
func TestMisspelledKeyIsNamed(t *testing.T) {
	env := nodetest.Start(t)
	if status, body := env.Super(t, http.MethodPost, "/api/admin/providers", map[string]any{"name": "Acme"}); status != http.StatusOK {
		t.Fatalf("provider: %d %s", status, body)
	}
	for _, c := range []struct {
		path   string
		body   map[string]any
		fields map[string]string // field → what its message must hold; "" must be absent
	}{
		{"/api/admin/providers", map[string]any{"nmae": "My ISP"},
			map[string]string{"name": "required", "nmae": `unknown field; did you mean "name"?`}},
		{"/api/admin/channels", map[string]any{"Name": "News", "number": 1},
			map[string]string{"name": "required", "Name": `did you mean "name"?`}},
		{"/api/provider/accounts", map[string]any{"provider": 1, "logn": "alice", "pin_md5": "81dc9bdb52d04dc20036dbd8313ed055"},
			map[string]string{"login": "required", "logn": `did you mean "login"?`}},
		{"/api/admin/providers", map[string]any{"colour": "red"},
			map[string]string{"name": "required", "colour": ""}},
	} {
		status, body := env.Super(t, http.MethodPost, c.path, c.body)
		var e struct {
			Cause  string
			Fields map[string]string
		}
		if status != http.StatusBadRequest || json.Unmarshal(body, &e) != nil {
			t.Errorf("POST %s %v: %d %s, want 400", c.path, c.body, status, body)
			continue
		}
		for field, want := range c.fields {
			got, named := e.Fields[field]
			switch {
			case want == "" && named:
				t.Errorf("POST %s %v names %s (%q), which spells no failed field", c.path, c.body, field, got)
			case want != "" && !strings.Contains(got, want):
				t.Errorf("POST %s %v: field %s says %q, want %q (body %s)", c.path, c.body, field, got, want, body)
			case want != "" && !strings.Contains(e.Cause, field+": "):
				t.Errorf("POST %s %v: the cause %q does not name %s", c.path, c.body, e.Cause, field)
			}
		}
	}
	// A misspelt key beside the right one changes nothing: the write is done.
	if status, body := env.Super(t, http.MethodPost, "/api/admin/providers", map[string]any{"name": "Beta", "nmae": "x"}); status != http.StatusOK {
		t.Errorf("a provider with a stray key: %d %s, want 200", status, body)
	}
}
