package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"tvsm/httpapi"
	"tvsm/internal/testkit/nodetest"
)

// bulkLine is one line of a bulk answer.
type bulkLine struct {
	Line   int    `json:"line"`
	Login  string `json:"login"`
	Status int    `json:"status"`
	Result string `json:"result"`
	ID     int64  `json:"id"`
	Error  *struct {
		Cause  string            `json:"cause"`
		Fields map[string]string `json:"fields"`
	} `json:"error"`
}

// bulk posts NDJSON to /accounts/bulk (query included in path) as p and
// returns the answer's lines.
func bulk(t *testing.T, p papi, path string, lines ...string) []bulkLine {
	t.Helper()
	out, _ := bulkAnswer(t, p, path, lines...)
	return out
}

// bulkAnswer is bulk that also returns the answer's trailer.
func bulkAnswer(t *testing.T, p papi, path string, lines ...string) ([]bulkLine, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.env.URL+"/api/provider/accounts/bulk"+path, strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(p.login, p.pass)
	req.Header.Set("Content-Type", "application/x-ndjson")
	// Its own connection: a request refused part-way leaves its body
	// unread, and the server closes such a connection.
	req.Close = true
	resp, err := p.env.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-ndjson") {
		t.Fatalf("bulk: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var out []bulkLine
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var l bulkLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("answer line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out, resp.Trailer
}

func record(login, fullname string, extra ...string) string {
	s := fmt.Sprintf(`{"login":%q,"fullname":%q,"pin_md5":%q`, login, fullname, pin("pw"))
	for _, e := range extra {
		s += "," + e
	}
	return s + "}"
}

func wantBulk(t *testing.T, got []bulkLine, want ...string) {
	t.Helper()
	var summary []string
	for _, l := range got {
		s := fmt.Sprintf("%d:%s:%d:%s", l.Line, l.Login, l.Status, l.Result)
		if l.Error != nil {
			for _, f := range slices.Sorted(maps.Keys(l.Error.Fields)) {
				s += ":" + f
			}
		}
		summary = append(summary, s)
	}
	if strings.Join(summary, " ") != strings.Join(want, " ") {
		t.Fatalf("bulk answer:\n got %v\nwant %v", summary, want)
	}
}

func TestAccountsBulk(t *testing.T) {
	env := nodetest.Start(t)
	prov := mustProvider(t, env, "Bulk ISP")
	other := mustProvider(t, env, "Other ISP")
	su := superClient(env)
	scoped := scopedClient(t, env, "bulk-admin", prov)

	// Creates, a bad record named by line, blank lines skipped, the same
	// login twice in one request (created, then updated), results in the
	// order sent.
	res := bulk(t, scoped, "",
		record("anna", "Anna"),
		"",
		record("bob", "Bob", `"contract_info":"C-2"`),
		record("", "No Login"),
		`{"login":"carl","fullname":""}`,
		record("anna", "Anna K."),
		`not json`,
	)
	wantBulk(t, res, "1:anna:200:created", "3:bob:200:created", "4::400::login", "5:carl:400::fullname:pin_md5", "6:anna:200:updated", "7::400:")
	if res[0].ID == 0 || res[4].ID != res[0].ID {
		t.Fatalf("anna's ids: %d then %d", res[0].ID, res[4].ID)
	}
	if a := scoped.ok(t, http.MethodGet, fmt.Sprintf("/accounts/%d", res[0].ID), nil); a.str(t, "fullname") != "Anna K." {
		t.Fatalf("anna after the request: %v", a)
	}

	// The same request again appends nothing.
	before := head(t, env)
	res = bulk(t, scoped, "", record("anna", "Anna K."), record("bob", "Bob", `"contract_info":"C-2"`))
	wantBulk(t, res, "1:anna:200:unchanged", "2:bob:200:unchanged")
	if head(t, env) != before {
		t.Fatal("an unchanged re-send appended events")
	}

	// Another provider's logins: by a superadmin with ?provider=, and not
	// by the scoped admin.
	res = bulk(t, su, fmt.Sprintf("?provider=%d", other), record("anna", "Other Anna"))
	wantBulk(t, res, "1:anna:200:created")
	if res[0].ID == 0 {
		t.Fatal("no id")
	}
	res = bulk(t, scoped, "", record("zed", "Zed", fmt.Sprintf(`"provider":%d`, other)))
	if len(res) != 1 || res[0].Status != http.StatusForbidden {
		t.Fatalf("a scoped admin's record of another provider: %+v", res)
	}
	// A superadmin's record without a provider is named.
	res = bulk(t, su, "", record("nobody", "No Provider"))
	wantBulk(t, res, "1:nobody:400::provider")

	// A line over the limit ends the answer with a line naming the problem.
	long := record("long", strings.Repeat("x", 2<<20))
	res = bulk(t, scoped, "", record("dora", "Dora"), long)
	if len(res) != 2 || res[0].Result != "created" || res[1].Status != http.StatusBadRequest || res[1].Line != 0 {
		t.Fatalf("a line too long: %+v", res)
	}
	// An unknown query parameter is refused before anything is read.
	status, body := env.DoHeader(t, http.MethodPost, "/api/provider/accounts/bulk?dry_run=1", env.SuperLogin, env.SuperPassword,
		bytes.NewReader(nil), http.Header{"Content-Type": {"application/x-ndjson"}})
	if status != http.StatusBadRequest || !strings.Contains(string(body), "dry_run") {
		t.Fatalf("unknown parameter: %d %s", status, body)
	}
}

// TestAccountsBulkMany: a few thousand records in one request, written
// concurrently, answered in order; re-sent, nothing is appended.
func TestAccountsBulkMany(t *testing.T) {
	env := nodetest.Start(t)
	prov := mustProvider(t, env, "Many ISP")
	su := superClient(env)
	const n = 3000
	lines := make([]string, n)
	for i := range lines {
		lines[i] = record(fmt.Sprintf("user%05d", i), fmt.Sprintf("User %d", i), fmt.Sprintf(`"provider":%d`, prov))
	}
	res, trailer := bulkAnswer(t, su, "", lines...)
	// The trailer names where the last of the writes reached.
	if got, want := trailer.Get(httpapi.HeaderPosition), httpapi.FormatPosition(head(t, env)); got != want {
		t.Errorf("trailer %s %q, want the head %q", httpapi.HeaderPosition, got, want)
	}
	if len(res) != n {
		t.Fatalf("%d answer lines for %d records", len(res), n)
	}
	for i, l := range res {
		if l.Line != i+1 || l.Status != http.StatusOK || l.Result != "created" || l.Login != fmt.Sprintf("user%05d", i) {
			t.Fatalf("line %d: %+v", i+1, l)
		}
	}
	before := head(t, env)
	res = bulk(t, su, "", lines...)
	for _, l := range res {
		if l.Result != "unchanged" {
			t.Fatalf("re-sent: %+v", l)
		}
	}
	if head(t, env) != before {
		t.Fatal("an unchanged re-send appended events")
	}
	if total := superClient(env).ok(t, http.MethodGet, fmt.Sprintf("/accounts?provider=%d&limit=1", prov), nil).int(t, "total"); total != n {
		t.Fatalf("%d accounts, want %d", total, n)
	}
}
