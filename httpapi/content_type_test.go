package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/wiring/node"
)

// The Content-Type rule of the Admin and Provider APIs: a request another
// site's page could make with the browser's cached Basic credentials (a
// "simple" request: no Content-Type, text/plain, a form) changes nothing.

// forgeable are the Content-Types a page may send cross-origin without a
// preflight, as browsers send them; "" is none (a bodiless fetch, or a
// Blob without a type).
var forgeable = []string{"", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
	"multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW"}

// TestStateChangingRoutesRefuseForgeableRequests walks every POST, PUT,
// PATCH and DELETE route of the Admin and Provider APIs, enumerated from
// the engine, as the superadmin whose credentials a browser would attach:
// each forgeable Content-Type, with a body and (POST) without one, is
// answered 415 naming the header and what to send, and nothing is appended.
func TestStateChangingRoutesRefuseForgeableRequests(t *testing.T) {
	env := nodetest.StartWith(t, nodetest.Options{Billing: node.BillingOptions{Enabled: true}})
	v := newVictim(t, env)
	before := head(t, env)
	walked := 0
	for _, r := range env.Node.Engine.Routes() {
		if !strings.HasPrefix(r.Path, "/api/admin/") && !strings.HasPrefix(r.Path, "/api/provider/") {
			continue
		}
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		default:
			continue
		}
		path, ok := v.pathFor(r.Path)
		if !ok {
			t.Errorf("%s %s: no value for a parameter of this route; add one to pathFor", r.Method, r.Path)
			continue
		}
		want := "application/json"
		if strings.HasSuffix(r.Path, "/bulk") {
			want = "application/x-ndjson or application/jsonl"
		}
		walked++
		for _, ct := range forgeable {
			bodies := []any{`{"name":"forged","provider":1,"login":"victim","fullname":"Forged"}`}
			if r.Method == http.MethodPost {
				bodies = append(bodies, nil)
			}
			for _, body := range bodies {
				status, data := env.DoHeader(t, r.Method, path, env.SuperLogin, env.SuperPassword, body,
					http.Header{"Content-Type": contentTypeHeader(ct)})
				e := decodeError(t, data)
				if status != http.StatusUnsupportedMediaType || e.Error != "unsupported_media_type" ||
					!strings.Contains(e.Cause, "Content-Type") || !strings.Contains(e.Cause, "send "+want) {
					t.Errorf("%s %s with Content-Type %q (body %v): %d %s; want 415 naming Content-Type and %s",
						r.Method, path, ct, body != nil, status, data, want)
				}
			}
		}
	}
	if walked < 40 {
		t.Fatalf("walked %d state-changing routes; the walk would prove little", walked)
	}
	if after := head(t, env); after != before {
		t.Errorf("forgeable requests appended events: head %v → %v", before, after)
	}
	// The victim's account is still there: its erasure was refused.
	if status, data := env.Super(t, http.MethodGet, "/api/provider/accounts/"+admItoa(v.account), nil); status != http.StatusOK {
		t.Errorf("the victim's account after the walk: %d %s", status, data)
	}
	t.Logf("walked %d state-changing routes", walked)
}

// TestJSONContentTypesAccepted: application/json in any case and with
// parameters is what the APIs take; the bulk route takes NDJSON under
// either name and refuses JSON; a DELETE without a body needs no
// Content-Type (`curl -X DELETE` sends none) while one with a body does;
// and a bodiless POST with the JSON type is served (the erasure).
func TestJSONContentTypesAccepted(t *testing.T) {
	env := nodetest.Start(t)
	super := func(method, path, ct string, body any) (int, []byte) {
		t.Helper()
		return env.DoHeader(t, method, path, env.SuperLogin, env.SuperPassword, body, http.Header{"Content-Type": contentTypeHeader(ct)})
	}
	var ids []int64
	for i, ct := range []string{"application/json", "Application/JSON; charset=UTF-8", "application/json;charset=utf-8", " application/json "} {
		status, data := super(http.MethodPost, "/api/admin/providers", ct, map[string]any{"name": "ISP " + admItoa(int64(i))})
		if status != http.StatusOK {
			t.Fatalf("POST /api/admin/providers with %q: %d %s", ct, status, data)
		}
		ids = append(ids, decodeObj(t, data).id(t))
	}
	provider := ids[0]

	record := `{"provider":` + admItoa(provider) + `,"login":"bulk-1","fullname":"Bulk One","pin_md5":""}` + "\n"
	for _, ct := range []string{"application/x-ndjson", "application/x-ndjson; charset=utf-8", "application/jsonl", "APPLICATION/JSONL"} {
		if status, data := super(http.MethodPost, "/api/provider/accounts/bulk", ct, record); status != http.StatusOK || !strings.Contains(string(data), `"status":200`) {
			t.Errorf("bulk with %q: %d %s", ct, status, data)
		}
	}
	status, data := super(http.MethodPost, "/api/provider/accounts/bulk", "application/json", record)
	if e := decodeError(t, data); status != http.StatusUnsupportedMediaType ||
		e.Cause != `Content-Type "application/json" is not supported; send application/x-ndjson or application/jsonl` {
		t.Errorf("bulk with application/json: %d %s", status, data)
	}

	// DELETE: without a body, no Content-Type is needed; with one, or
	// declaring another type, it is refused.
	if status, data := super(http.MethodDelete, "/api/admin/providers/"+admItoa(ids[1]), "", nil); status != http.StatusOK {
		t.Errorf("DELETE without a body or Content-Type: %d %s", status, data)
	}
	if status, data := super(http.MethodDelete, "/api/admin/providers/"+admItoa(ids[2]), "text/plain", nil); status != http.StatusUnsupportedMediaType {
		t.Errorf("DELETE declaring text/plain: %d %s", status, data)
	}
	if status, data := super(http.MethodDelete, "/api/admin/providers/"+admItoa(ids[2]), "", `{}`); status != http.StatusUnsupportedMediaType ||
		decodeError(t, data).Cause != "Content-Type header missing; send application/json" {
		t.Errorf("DELETE with a body and no Content-Type: %d %s", status, data)
	}

	// The erasure: a bodiless POST, served with the JSON type.
	status, data = super(http.MethodPost, "/api/provider/accounts", "application/json",
		map[string]any{"provider": provider, "login": "erin", "fullname": "Erin", "pin_md5": ""})
	if status != http.StatusOK {
		t.Fatalf("create: %d %s", status, data)
	}
	account := decodeObj(t, data).id(t)
	if status, data := super(http.MethodPost, "/api/provider/accounts/"+admItoa(account)+"/erase", "", nil); status != http.StatusUnsupportedMediaType {
		t.Errorf("erase without Content-Type: %d %s", status, data)
	}
	if status, data := super(http.MethodPost, "/api/provider/accounts/"+admItoa(account)+"/erase", "application/json", nil); status != http.StatusOK {
		t.Errorf("erase with application/json: %d %s", status, data)
	}
}

// TestContentTypeCheckedBeforeCredentials: a forgeable request is refused
// before its credentials are checked (no password check is spent on it),
// and what the Device API's clients send is read as before: they hold no
// credentials a browser would attach by itself (a Bearer token, a body),
// so a login without a Content-Type is served.
func TestContentTypeCheckedBeforeCredentials(t *testing.T) {
	env := nodetest.Start(t)
	checks := metric(t, env, "tvsm_password_checks_total")
	for _, login := range []string{"", env.SuperLogin} {
		status, data := env.DoHeader(t, http.MethodPost, "/api/admin/providers", login, "wrong-password", `{"name":"x"}`,
			http.Header{"Content-Type": {"text/plain"}})
		if status != http.StatusUnsupportedMediaType {
			t.Errorf("text/plain with login %q and a wrong password: %d %s", login, status, data)
		}
	}
	if n := metric(t, env, "tvsm_password_checks_total") - checks; n != 0 {
		t.Errorf("%v password checks for requests refused for their Content-Type, want 0", n)
	}
	provider := mustProvider(t, env, "Device ISP")
	if status, data := env.Super(t, http.MethodPost, "/api/provider/accounts", map[string]any{
		"provider": provider, "login": "dana", "fullname": "Dana", "pin_md5": md5hex("1234")}); status != http.StatusOK {
		t.Fatalf("account: %d %s", status, data)
	}
	login := `{"provider":` + admItoa(provider) + `,"login":"dana","password_md5":"` + md5hex("1234") + `","device":{"unique_id":"box-9","class":"stb"}}`
	status, data := env.DoHeader(t, http.MethodPost, "/api/device/login", "", "", login, http.Header{"Content-Type": nil})
	if status != http.StatusOK || !strings.Contains(string(data), `"token"`) {
		t.Errorf("device login without a Content-Type: %d %s", status, data)
	}
}

// contentTypeHeader is the header value of ct; nil leaves the header out.
func contentTypeHeader(ct string) []string {
	if ct == "" {
		return nil
	}
	return []string{ct}
}

type errorBody struct {
	Error string `json:"error"`
	Cause string `json:"cause"`
}

func decodeError(t testing.TB, data []byte) errorBody {
	t.Helper()
	var e errorBody
	_ = json.Unmarshal(data, &e) // a body that is no error leaves it empty, which the caller reports
	return e
}
