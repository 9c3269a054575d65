package tvipimport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/tools/tvipimport"
)

// fastRetry keeps the tests' retries short.
var fastRetry = tvipimport.Retry{Attempts: 4, First: time.Millisecond, Max: 10 * time.Millisecond}

func options(src, dst *nodetest.Env) tvipimport.Options {
	return tvipimport.Options{
		Source:   tvipimport.Endpoint{URL: src.URL, Login: src.SuperLogin, Password: src.SuperPassword},
		Target:   tvipimport.Endpoint{URL: dst.URL, Login: dst.SuperLogin, Password: dst.SuperPassword},
		Retry:    fastRetry,
		PageSize: 3, // several pages, even of small collections
		Workers:  4,
	}
}

// must sends a request that must answer 200 and returns the answer's id.
func must(t *testing.T, env *nodetest.Env, method, path string, body any) int64 {
	t.Helper()
	status, data := env.Super(t, method, path, body)
	if status != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, path, status, data)
	}
	var v struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s %s: %v in %s", method, path, err, data)
	}
	return v.ID
}

func pin(login string) string { return fmt.Sprintf("%032x", []byte(login + "0000000000000000")[:16]) }

// source is a node holding every resource the import copies, with gaps in
// its ids (objects created and deleted), so that ids kept are ids kept.
type source struct {
	env                                   *nodetest.Env
	provider, tariff, account, device, ds int64
	accounts                              []int64
}

func newSource(t *testing.T) source {
	env := nodetest.Start(t)
	s := source{env: env}
	region := must(t, env, "POST", "/api/admin/regions", map[string]any{"name": "North"})
	must(t, env, "POST", "/api/admin/regions", map[string]any{"name": "South"})
	gone := must(t, env, "POST", "/api/admin/providers", map[string]any{"name": "Gone"})
	must(t, env, "DELETE", fmt.Sprintf("/api/admin/providers/%d", gone), nil)
	s.provider = must(t, env, "POST", "/api/admin/providers", map[string]any{"name": "Kept", "region_tag": region, "comment": "the one", "devices_per_account_limit": 4})
	news := must(t, env, "POST", "/api/admin/categories", map[string]any{"name": "News"})
	ch1 := must(t, env, "POST", "/api/admin/channels", map[string]any{"name": "One", "number": 1, "categories": []int64{news}})
	ch2 := must(t, env, "POST", "/api/admin/channels", map[string]any{"name": "Two", "number": 2, "text_name": "Second", "time_shift_depth": 24, "enabled": false})
	tag := must(t, env, "POST", "/api/provider/tarif_tags", map[string]any{"provider": s.provider, "name": "Base", "position": 3})
	s.tariff = must(t, env, "POST", "/api/provider/tarifs", map[string]any{"provider": s.provider, "tarif_name": "Basic", "tarif_tag": tag, "channels": []int64{ch2, ch1}, "description": "two channels"})
	must(t, env, "POST", "/api/provider/tarifs", map[string]any{"provider": s.provider, "tarif_name": "Off", "enabled": false})
	dtype := must(t, env, "POST", "/api/provider/device_types", map[string]any{"device_type": "S-Box"})
	for i := range 8 {
		login := fmt.Sprintf("user%d", i)
		body := map[string]any{"provider": s.provider, "login": login, "pin_md5": pin(login), "fullname": "User " + login, "enabled": i%3 != 0}
		if i == 2 {
			body["contract_info"], body["main_address"], body["region_tag"] = "C-2", "1 Main St", region
		}
		id := must(t, env, "POST", "/api/provider/accounts", body)
		if i == 4 || i == 5 {
			must(t, env, "DELETE", fmt.Sprintf("/api/provider/accounts/%d", id), nil)
			continue
		}
		s.accounts = append(s.accounts, id)
	}
	s.account = s.accounts[1]
	must(t, env, "POST", "/api/provider/account_network", map[string]any{"account": s.account, "network": "10.1.0.0/16", "description": "office"})
	for i, a := range s.accounts {
		body := map[string]any{"account": a, "tarif": s.tariff, "start": "2026-01-01T00:00:00+0000"}
		if i%2 == 1 {
			body["stop"] = "2027-01-01T00:00:00+0300"
		}
		must(t, env, "POST", "/api/provider/account_subscriptions", body)
	}
	s.device = must(t, env, "POST", "/api/provider/devices", map[string]any{"account": s.account, "unique_id": "box-1", "mac": "00:1a:2b:3c:4d:5e", "device_type": dtype, "comment": "hall"})
	must(t, env, "POST", "/api/provider/devices", map[string]any{"account": s.accounts[2], "unique_id": "tv-2", "use_nat": true})
	s.ds = must(t, env, "POST", "/api/provider/device_subscriptions", map[string]any{"device": s.device, "tarif": s.tariff, "start": "2026-02-01T00:00:00+0000"})
	return s
}

func headOf(t *testing.T, env *nodetest.Env) eventstore.Position {
	t.Helper()
	p, err := env.Store.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func readStream(t *testing.T, env *nodetest.Env, stream string) []eventstore.RecordedEvent {
	t.Helper()
	events, err := env.Store.ReadStream(context.Background(), stream, eventstore.Start, 100000)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func mustImport(t *testing.T, o tvipimport.Options) tvipimport.Report {
	t.Helper()
	r, err := tvipimport.Import(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() {
		t.Fatalf("import not OK: %+v", r.Resources)
	}
	return r
}

func mustVerify(t *testing.T, o tvipimport.Options) {
	t.Helper()
	diffs, err := tvipimport.Verify(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		t.Errorf("verify: %s", d)
	}
}

func counts(r tvipimport.Report) map[string][6]int {
	m := map[string][6]int{}
	for _, res := range r.Resources {
		m[res.Name] = [6]int{res.Read, res.Created, res.Changed, res.Unchanged, res.Deleted, res.Refused}
	}
	return m
}

// Given a source with every resource and gaps in its ids, when it is
// imported into a new node, then every object is there under its id and
// --verify finds no difference; a second run appends no event; after
// changes at the source a run appends exactly them.
func TestImportCopiesEverythingWithItsIDsAndCatchesUp(t *testing.T) {
	t.Parallel()
	src := newSource(t)
	dst := nodetest.Start(t)
	o := options(src.env, dst)
	o.Pins = map[string]string{"user1": pin("user1")}

	first := mustImport(t, o)
	for name, c := range counts(first) {
		if c[0] == 0 || c[1] != c[0] {
			t.Errorf("%s: read %d, created %d: want every one created", name, c[0], c[1])
		}
	}
	if first.WithoutPassword != 5 || first.PinsSent != 1 {
		t.Errorf("accounts without a password %d, with a pin %d; want 5 and 1", first.WithoutPassword, first.PinsSent)
	}
	mustVerify(t, o)
	// The pin came with the account: its device logs in.
	status, body := dst.Do(t, "POST", "/api/device/login", "", "", map[string]any{"provider": src.provider, "login": "user1", "password_md5": pin("user1"),
		"device": map[string]any{"unique_id": "box-login", "class": "stb"}})
	if status != http.StatusOK {
		t.Errorf("device login with the imported pin: %d %s", status, body)
	}

	head := headOf(t, dst)
	second := mustImport(t, o)
	if after := headOf(t, dst); after != head {
		t.Errorf("a second run appended events: head %v → %v", head, after)
	}
	for name, c := range counts(second) {
		if c[1]+c[2]+c[4]+c[5] != 0 {
			t.Errorf("second run, %s: %v (read, created, changed, unchanged, deleted, refused); want only unchanged", name, c)
		}
	}

	// At the source: an account renamed, one created, a device
	// subscription deleted.
	must(t, src.env, "PUT", fmt.Sprintf("/api/provider/accounts/%d", src.account), map[string]any{"fullname": "Renamed"})
	added := must(t, src.env, "POST", "/api/provider/accounts", map[string]any{"provider": src.provider, "login": "late", "pin_md5": "", "fullname": "Late"})
	must(t, src.env, "DELETE", fmt.Sprintf("/api/provider/device_subscriptions/%d", src.ds), nil)
	stream := domain.AccountStream(src.account)
	before := len(readStream(t, dst, stream))
	third := mustImport(t, o)
	c := counts(third)
	if c["accounts"][1] != 1 || c["accounts"][2] != 1 || c["device_subscriptions"][4] != 1 || third.Writes() != 3 {
		t.Errorf("after the changes: accounts %v, device_subscriptions %v, writes %d; want 1 created, 1 changed, 1 deleted", c["accounts"], c["device_subscriptions"], third.Writes())
	}
	// The account's stream holds its device's subscriptions too: the
	// rename and the deleted device subscription, nothing else.
	var types []string
	for _, e := range readStream(t, dst, stream)[before:] {
		types = append(types, strings.Split(e.Type, ".")[0])
	}
	if strings.Join(types, " ") != "AccountUpdated SubscriptionRemoved" {
		t.Errorf("the renamed account's stream got %v, want the rename and the removed device subscription", types)
	}
	var got struct {
		ID int64 `json:"id"`
	}
	status, body = dst.Super(t, "GET", fmt.Sprintf("/api/provider/accounts/%d", added), nil)
	if status != http.StatusOK || json.Unmarshal(body, &got) != nil || got.ID != added {
		t.Errorf("the account created at the source since: %d %s", status, body)
	}
	mustVerify(t, o)

	// A native create continues above the imported ids.
	if id := must(t, dst, "POST", "/api/provider/accounts", map[string]any{"provider": src.provider, "login": "native", "pin_md5": "", "fullname": "N"}); id <= added {
		t.Errorf("a new account at the target got id %d, at or below the imported %d", id, added)
	}
}

// Given a target that created an object of its own under an id the source
// uses, when the import meets it, then it refuses that object, names why,
// and takes every other; the report is not OK.
func TestImportRefusesWhatTheTargetHoldsItself(t *testing.T) {
	t.Parallel()
	src := newSource(t)
	dst := nodetest.Start(t)
	o := options(src.env, dst)
	mustImport(t, o)
	// Both sides create an account: each gets the id after the last.
	theirs := must(t, src.env, "POST", "/api/provider/accounts", map[string]any{"provider": src.provider, "login": "theirs", "pin_md5": "", "fullname": "T"})
	ours := must(t, dst, "POST", "/api/provider/accounts", map[string]any{"provider": src.provider, "login": "ours", "pin_md5": "", "fullname": "O"})
	if theirs != ours {
		t.Fatalf("the setup wants one id on both sides: %d and %d", theirs, ours)
	}
	// And a subscription naming a tariff the target does not have.
	must(t, src.env, "POST", "/api/provider/account_subscriptions", map[string]any{"account": src.accounts[0], "tarif": src.tariff, "start": "2026-03-01T00:00:00+0000"})
	r, err := tvipimport.Import(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if r.OK() {
		t.Fatal("an import with a refusal reports OK")
	}
	c := counts(r)
	if c["accounts"][5] != 1 || !strings.Contains(r.Resources[7].Refusals[0].Reason, `"theirs" at the source, "ours" at the target`) {
		t.Errorf("accounts: %v %+v; want the one id refused, naming both logins", c["accounts"], r.Resources[7].Refusals)
	}
	if c["account_subscriptions"][1] != 1 {
		t.Errorf("account_subscriptions: %v; want the new one created", c["account_subscriptions"])
	}
}

// faulty stands before a source and answers 500 to the accounts page at
// start=3 while fail says so.
type faulty struct {
	proxy  *httputil.ReverseProxy
	fail   atomic.Int64 // failures left; negative: for ever
	failed atomic.Int64
}

func (f *faulty) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/api/provider/accounts" && r.URL.Query().Get("start") == "3" && f.fail.Load() != 0 {
		f.fail.Add(-1)
		f.failed.Add(1)
		http.Error(w, `{"statusCode":500,"cause":"injected"}`, http.StatusInternalServerError)
		return
	}
	f.proxy.ServeHTTP(w, r)
}

func behindFaults(t *testing.T, env *nodetest.Env) (*faulty, string) {
	u, err := url.Parse(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	f := &faulty{proxy: httputil.NewSingleHostReverseProxy(u)}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

// Given a source that answers 500 to a page of accounts, when the 500s
// pass within the retries, then the import completes as if nothing
// happened; when they do not, then the accounts are reported failed at that
// page, no object is copied in part, and a later run resumes and
// completes.
func TestImportResumesAfterSourceErrors(t *testing.T) {
	t.Parallel()
	src := newSource(t)
	f, proxied := behindFaults(t, src.env)

	dst := nodetest.Start(t)
	o := options(src.env, dst)
	o.Source.URL = proxied
	f.fail.Store(2)
	mustImport(t, o)
	if f.failed.Load() != 2 {
		t.Fatalf("the source failed %d times, want 2", f.failed.Load())
	}
	mustVerify(t, o)

	dst = nodetest.Start(t)
	o = options(src.env, dst)
	o.Source.URL = proxied
	f.fail.Store(-1)
	r, err := tvipimport.Import(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	accounts := r.Resources[7]
	if r.OK() || !strings.Contains(accounts.Failed, "start=3") || !strings.Contains(accounts.Failed, "500") {
		t.Fatalf("with the page failing for ever: accounts %+v; want it failed, naming the page and the status", accounts)
	}
	if accounts.Created != 0 {
		t.Errorf("a failed read created %d accounts; want none until the whole list is read", accounts.Created)
	}
	f.fail.Store(0)
	mustImport(t, o)
	mustVerify(t, o)
}

// The importer keeps a connection open for each of its workers: a new one
// an object would cost the node an accept, a goroutine and a handshake of
// its own each time (Go's default transport keeps two idle connections a
// host).
func TestImportReusesConnections(t *testing.T) {
	t.Parallel()
	src := newSource(t)
	var bulk strings.Builder
	for i := range 300 {
		fmt.Fprintf(&bulk, `{"provider":%d,"login":"bulk%d","pin_md5":"","fullname":"B"}`+"\n", src.provider, i)
	}
	if status, body := src.env.DoHeader(t, "POST", "/api/provider/accounts/bulk", src.env.SuperLogin, src.env.SuperPassword,
		bulk.String(), http.Header{"Content-Type": {"application/x-ndjson"}}); status != http.StatusOK || strings.Contains(string(body), `"status":400`) {
		t.Fatalf("bulk: %d %s", status, body)
	}
	dst := nodetest.Start(t)
	u, err := url.Parse(dst.URL)
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int64
	proxy := httptest.NewUnstartedServer(httputil.NewSingleHostReverseProxy(u))
	proxy.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	proxy.Start()
	t.Cleanup(proxy.Close)
	o := options(src.env, dst)
	o.Target.URL, o.Workers = proxy.URL, 16
	r := mustImport(t, o)
	t.Logf("%d writes over %d connections", r.Writes(), conns.Load())
	if writes := r.Writes(); writes < 300 || conns.Load() > int64(o.Workers)+4 {
		t.Errorf("%d writes over %d connections; want at most a connection a worker (%d) and a few", writes, conns.Load(), o.Workers)
	}
}

// Given objects imported before, when the import runs against a source
// that lists none of them (a wrong --from), then nothing is deleted and
// the resources are reported failed.
func TestImportDeletesNothingWhenTheSourceLooksLikeAnotherServer(t *testing.T) {
	t.Parallel()
	src := newSource(t)
	dst := nodetest.Start(t)
	mustImport(t, options(src.env, dst))
	head := headOf(t, dst)
	other := nodetest.Start(t) // an empty server
	r, err := tvipimport.Import(context.Background(), options(other, dst))
	if err != nil {
		t.Fatal(err)
	}
	if r.OK() || r.Writes() != 0 {
		t.Fatalf("against an empty source: OK %v, %d writes; want not OK and none", r.OK(), r.Writes())
	}
	for _, res := range r.Resources {
		if res.Name == "accounts" && !strings.Contains(res.Failed, "nothing deleted") {
			t.Errorf("accounts: %q; want the deletes refused", res.Failed)
		}
	}
	if after := headOf(t, dst); after != head {
		t.Errorf("the node changed: %v → %v", head, after)
	}
	mustVerify(t, options(src.env, dst))
}
