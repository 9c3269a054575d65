package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"tvsm/internal/testkit/nodetest"
)

// Contract tests of the Provider API's catalog against what TVIP's Python
// SDK (tmsproviderapisdk) sends and reads: its paths end with a slash
// (/tarifs/?start=0&limit=50, POST /tarifs/), an object is /tarifs/7,
// booleans in query strings are Python's True and False, creates and
// updates send the whole object (id null on create), and a redirect is
// not followed.

// sdkClient sends requests as the SDK does, as one admin.
type sdkClient struct {
	env         *nodetest.Env
	login, pass string
}

func sdkAs(p papi) sdkClient { return sdkClient{env: p.env, login: p.login, pass: p.pass} }

// do sends method to /api/provider+path with the SDK's headers over a
// client that reports redirects instead of following them.
func (s sdkClient) do(t testing.TB, method, path string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, s.env.URL+"/api/provider"+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", "Tmsproviderapisdk v:unknown")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(s.login, s.pass)
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

// ok sends a request that must answer 200 (the only status the SDK takes
// for success) and returns the body.
func (s sdkClient) ok(t testing.TB, method, path string, body any) []byte {
	t.Helper()
	status, data := s.do(t, method, path, body)
	if status != http.StatusOK {
		t.Fatalf("%s %s: status %d, want 200: %s", method, path, status, data)
	}
	return data
}

// object sends a request that must answer 200 with one object of shape.
func (s sdkClient) object(t testing.TB, method, path string, body any, shape sdkShape) map[string]any {
	t.Helper()
	o := decodeNumbers(t, s.ok(t, method, path, body))
	assertShape(t, method+" "+path, o, shape)
	return o
}

// list gets a list (path with its query string) that must have shape and
// returns the ids of its items, in order.
func (s sdkClient) list(t testing.TB, path string, shape sdkShape) []int64 {
	t.Helper()
	items := assertListShape(t, "GET "+path, s.ok(t, http.MethodGet, path, nil), shape)
	out := make([]int64, len(items))
	for i, it := range items {
		out[i] = obj(it).id(t)
	}
	return out
}

// fails sends a request that must answer status; it returns the error
// body.
func (s sdkClient) fails(t testing.TB, status int, method, path string, body any) apiError {
	t.Helper()
	got, data := s.do(t, method, path, body)
	if got != status {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, got, status, data)
	}
	var e apiError
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatalf("%s %s: error body %q: %v", method, path, data, err)
	}
	return e
}

// wantIDs fails t unless got equals want.
func wantIDs(t testing.TB, what string, got []int64, want ...int64) {
	t.Helper()
	if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Errorf("%s: ids %v, want %v", what, got, want)
	}
}

// narrows checks that a filter narrows a list: the list without it has
// more items than with it, and with it exactly want.
func (s sdkClient) narrows(t testing.TB, base, filter string, shape sdkShape, want ...int64) {
	t.Helper()
	all := s.list(t, base, shape)
	sep := "&"
	if !strings.Contains(base, "?") {
		sep = "?"
	}
	got := s.list(t, base+sep+filter, shape)
	wantIDs(t, base+" with "+filter, got, want...)
	if len(got) >= len(all) {
		t.Errorf("%s: filter %s does not narrow the list (%d of %d)", base, filter, len(got), len(all))
	}
}

// unknownFilter checks that a list refuses a parameter it does not know,
// naming it.
func (s sdkClient) unknownFilter(t testing.TB, path string) {
	t.Helper()
	s.fails(t, http.StatusBadRequest, http.MethodGet, path+"?start=0&limit=50&no_such_filter=1", nil).field(t, "no_such_filter")
}

// sameObject fails t unless two answers carry the same keys and values.
func sameObject(t testing.TB, what string, got, want map[string]any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if !bytes.Equal(g, w) {
		t.Errorf("%s:\ngot  %s\nwant %s", what, g, w)
	}
}

// mustAdmin sends an Admin API request as the superadmin that must answer
// 200 and returns the object's id.
func mustAdmin(t testing.TB, env *nodetest.Env, method, path string, body any) int64 {
	t.Helper()
	status, data := env.Super(t, method, "/api/admin"+path, body)
	if status != http.StatusOK {
		t.Fatalf("%s /api/admin%s: %d %s", method, path, status, data)
	}
	return decodeObj(t, data).id(t)
}
