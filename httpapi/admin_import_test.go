package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"tvsm/httpapi"
	"tvsm/internal/testkit/nodetest"
)

type importRanges struct {
	Kind   string `json:"kind"`
	Top    int64  `json:"top"`
	Ranges []struct {
		From int64 `json:"from"`
		To   int64 `json:"to"`
	} `json:"ranges"`
}

func reserveImport(t *testing.T, env *nodetest.Env, kind string, through int64) importRanges {
	t.Helper()
	status, body := env.Super(t, http.MethodPost, "/api/admin/import/ids", map[string]any{"kind": kind, "through": through})
	if status != http.StatusOK {
		t.Fatalf("reserve %s through %d: %d %s", kind, through, status, body)
	}
	var r importRanges
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// Given ids reserved for import, when a superadmin creates with
// X-TVSM-Import-ID, then the object gets that id, on the Admin and the
// Provider API; an id not reserved is refused (409, nothing created); and
// objects created afterwards continue above the imported ids.
func TestImportKeepsIDs(t *testing.T) {
	env := nodetest.Start(t)
	importID := func(id int64) http.Header { return http.Header{httpapi.ImportIDHeader: {fmt.Sprint(id)}} }

	if r := reserveImport(t, env, "provider", 40); len(r.Ranges) != 1 || r.Ranges[0].From != 1 || r.Ranges[0].To != 40 || r.Top != 40 {
		t.Fatalf("reserve providers through 40 on a new node: %+v", r)
	}
	status, body := env.DoHeader(t, http.MethodPost, "/api/admin/providers", env.SuperLogin, env.SuperPassword,
		map[string]any{"name": "Imported"}, importID(17))
	if status != http.StatusOK || decodeObj(t, body).id(t) != 17 {
		t.Fatalf("create provider with import id 17: %d %s", status, body)
	}
	if got := mustProvider(t, env, "Native"); got != 41 {
		t.Fatalf("a provider created after the import has id %d, want 41", got)
	}

	reserveImport(t, env, "account", 1000)
	body2 := accountBody(17, "kept")
	status, body = env.DoHeader(t, http.MethodPost, "/api/provider/accounts", env.SuperLogin, env.SuperPassword, body2, importID(999))
	if status != http.StatusOK || decodeObj(t, body).id(t) != 999 {
		t.Fatalf("create account with import id 999: %d %s", status, body)
	}
	status, body = env.DoHeader(t, http.MethodPost, "/api/provider/accounts", env.SuperLogin, env.SuperPassword, accountBody(17, "beyond"), importID(1001))
	if status != http.StatusConflict || !strings.Contains(string(body), "import/ids") {
		t.Fatalf("create account with an id not reserved: %d %s, want 409 saying how to reserve it", status, body)
	}
	if status, body := env.Super(t, http.MethodGet, "/api/provider/accounts?login=beyond", nil); !strings.Contains(string(body), `"total":0`) {
		t.Fatalf("the refused create left an account: %d %s", status, body)
	}
	status, body = env.Super(t, http.MethodPost, "/api/provider/accounts", accountBody(17, "native"))
	if status != http.StatusOK || decodeObj(t, body).id(t) != 1001 {
		t.Fatalf("a native account after the import: %d %s, want id 1001", status, body)
	}

	// Only superadmins import, and the header's id must be an id.
	scoped := scopedClient(t, env, "scoped-importer", 17)
	status, _ = scoped.doHeader(t, http.MethodPost, "/accounts", accountBody(17, "scoped"), importID(998))
	if status != http.StatusForbidden {
		t.Errorf("a provider-scoped admin's import create: %d, want 403", status)
	}
	if status, _ := env.Do(t, http.MethodPost, "/api/admin/import/ids", scoped.login, scoped.pass, map[string]any{"kind": "account", "through": 5000}); status != http.StatusForbidden {
		t.Errorf("a provider-scoped admin's reservation: %d, want 403", status)
	}
	for _, bad := range []string{"0", "-3", "x", "1.5"} {
		status, body := env.DoHeader(t, http.MethodPost, "/api/provider/accounts", env.SuperLogin, env.SuperPassword,
			accountBody(17, "bad"+bad), http.Header{httpapi.ImportIDHeader: {bad}})
		if status != http.StatusBadRequest || !strings.Contains(string(body), httpapi.ImportIDHeader) {
			t.Errorf("import id %q: %d %s, want 400 naming the header", bad, status, body)
		}
	}
	status, body = env.DoHeader(t, http.MethodPost, "/api/provider/accounts/bulk", env.SuperLogin, env.SuperPassword,
		`{"provider":17,"login":"bulk1","pin_md5":"","fullname":"B"}`+"\n", http.Header{httpapi.ImportIDHeader: {"997"}, "Content-Type": {"application/x-ndjson"}})
	if status != http.StatusBadRequest || !strings.Contains(string(body), httpapi.ImportIDHeader) {
		t.Errorf("import id on a bulk request: %d %s, want 400 naming the header", status, body)
	}
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"kind": "accounts", "through": 5}, "kind"},
		{map[string]any{"through": 5}, "kind"},
		{map[string]any{"kind": "account", "through": -1}, "through"},
		{map[string]any{"kind": "account", "thruogh": 5}, "thruogh"},
	} {
		status, body := env.Super(t, http.MethodPost, "/api/admin/import/ids", tc.body)
		if status != http.StatusBadRequest || !strings.Contains(string(body), `"`+tc.field+`"`) {
			t.Errorf("reserve %v: %d %s, want 400 naming %s", tc.body, status, body, tc.field)
		}
	}
	if r := reserveImport(t, env, "account", 0); len(r.Ranges) != 1 || r.Ranges[0].To != 1000 || r.Top < 1001 {
		t.Errorf("the account ranges after it all: %+v", r)
	}
}

// A key that is empty, or would read as a path, is named as JSON spells it,
// quoted: an unknown one where unknown fields are refused, and a repeated
// one anywhere. Every field an error names is a name, pointing at one
// member.
func TestOddKeysAreNamedQuoted(t *testing.T) {
	env := nodetest.Start(t)
	for _, tc := range []struct {
		body  string
		field string
		msg   string
	}{
		{`{"kind":"account","through":5,"":1}`, `""`, "unknown field"},
		{`{"kind":"account","through":5,"a.b":1}`, `"a.b"`, "unknown field"},
		{`{"kind":"account","through":5,"x":{"":1,"":2}}`, `x.""`, "appears more than once in its object"},
		{`{"kind":"account","through":5,"":{"":1,"":2}}`, `"".""`, "appears more than once in its object"},
	} {
		status, body := env.Super(t, http.MethodPost, "/api/admin/import/ids", tc.body)
		var e struct {
			Fields map[string]string `json:"fields"`
		}
		if err := json.Unmarshal(body, &e); status != http.StatusBadRequest || err != nil || e.Fields[tc.field] != tc.msg {
			t.Errorf("%s: %d %s, want 400 naming %s: %s", tc.body, status, body, tc.field, tc.msg)
		}
	}
	if r := reserveImport(t, env, "account", 5); len(r.Ranges) != 1 {
		t.Errorf("the refused reservations changed what a good one gets: %+v", r)
	}
}
