package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tvsm/internal/testkit/nodetest"
)

// TestProviderSync is the must-show: a provider's sync job pushes
// its accounts through the Provider API over real HTTP with concurrent
// clients: it creates them all, re-sends every record unchanged (which
// must append no event), then re-sends them with 10% changed (which must
// append exactly one event per changed account).
//
// It syncs 2,000 accounts by default; TVSM_SYNC_ACCOUNTS sets the number
// (the figure in docs comes from TVSM_SYNC_ACCOUNTS=100000) and
// TVSM_SYNC_CLIENTS the number of concurrent clients (default 32):
//
//	TVSM_SYNC_ACCOUNTS=100000 go test -run TestProviderSync -v -count=1 ./httpapi/
func TestProviderSync(t *testing.T) {
	n := envInt(t, "TVSM_SYNC_ACCOUNTS", 2000)
	clients := envInt(t, "TVSM_SYNC_CLIENTS", 32)
	if testing.Short() {
		n = min(n, 200)
	}
	env := nodetest.Start(t)
	prov := mustProvider(t, env, "Sync")
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
	t.Cleanup(hc.CloseIdleConnections)

	// The sync job's own records.
	records := make([]map[string]any, n)
	for i := range records {
		records[i] = map[string]any{
			"enabled":             i%7 != 0,
			"login":               fmt.Sprintf("sub%07d", i),
			"pin_md5":             pin(strconv.Itoa(i)),
			"fullname":            fmt.Sprintf("Subscriber %d", i),
			"provider":            prov,
			"contract_info":       fmt.Sprintf("contract %d", i),
			"remote_custom_field": strconv.Itoa(i),
			"main_address":        nil,
		}
	}
	ids := make([]int64, n)

	phase := func(name string, send func(i int) (method, path string, body any), check func(i int, resp []byte) error) {
		t.Helper()
		before := head(t, env)
		var next atomic.Int64
		var failures atomic.Int64
		var firstErr atomic.Value
		started := time.Now()
		lat := make([]time.Duration, n)
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				for {
					i := int(next.Add(1) - 1)
					if i >= n {
						return
					}
					method, path, body := send(i)
					t0 := time.Now()
					status, resp, err := syncDo(hc, env, method, path, body)
					lat[i] = time.Since(t0)
					if err == nil && status != http.StatusOK {
						err = fmt.Errorf("%s %s: %d %s", method, path, status, resp)
					}
					if err == nil {
						err = check(i, resp)
					}
					if err != nil {
						failures.Add(1)
						firstErr.CompareAndSwap(nil, err)
					}
				}
			})
		}
		wg.Wait()
		took := time.Since(started)
		after := head(t, env)
		t.Logf("%-8s %7d accounts, %d clients: %8.2fs, %7.0f req/s, %6.2f ms/req per client, %7d events appended",
			name, n, clients, took.Seconds(), float64(n)/took.Seconds(), took.Seconds()*1000*float64(clients)/float64(n), after.Commit-before.Commit)
		slices.Sort(lat)
		t.Logf("%-8s latency p50 %v, p90 %v, p99 %v, max %v", name,
			lat[n/2].Round(time.Microsecond), lat[n*9/10].Round(time.Microsecond), lat[n*99/100].Round(time.Microsecond), lat[n-1].Round(time.Microsecond))
		if f := failures.Load(); f > 0 {
			t.Fatalf("%s: %d requests failed; first: %v", name, f, firstErr.Load())
		}
	}
	events := func(from, to uint64) uint64 { return to - from }

	// 1. Create every account.
	h0 := head(t, env)
	phase("create", func(i int) (string, string, any) {
		return http.MethodPost, "/api/provider/accounts", records[i]
	}, func(i int, resp []byte) error {
		var a struct {
			ID    int64  `json:"id"`
			Login string `json:"login"`
		}
		if err := json.Unmarshal(resp, &a); err != nil || a.ID <= 0 || a.Login != records[i]["login"] {
			return fmt.Errorf("create %d answered %s (%v)", i, resp, err)
		}
		ids[i] = a.ID
		return nil
	})
	h1 := head(t, env)
	// An account and its login reservation each, plus id blocks.
	if got := events(h0.Commit, h1.Commit); got < uint64(2*n) {
		t.Fatalf("create appended %d events, want at least %d", got, 2*n)
	}

	// 2. Re-send every record, unchanged, with its id: nothing to append.
	resend := func(i int) (string, string, any) {
		body := make(map[string]any, len(records[i])+1)
		for k, v := range records[i] {
			body[k] = v
		}
		body["id"] = ids[i]
		return http.MethodPost, "/api/provider/accounts", body
	}
	noCheck := func(int, []byte) error { return nil }
	phase("resend", resend, noCheck)
	h2 := head(t, env)
	if got := events(h1.Commit, h2.Commit); got != 0 {
		t.Fatalf("re-sending unchanged records appended %d events, want 0", got)
	}

	// 3. Re-send with 10% changed: exactly one event per changed account.
	changed := 0
	for i := range records {
		if i%10 == 3 {
			records[i]["fullname"] = fmt.Sprintf("Subscriber %d (moved)", i)
			changed++
		}
	}
	phase("change", resend, func(i int, resp []byte) error {
		var a struct {
			Fullname string `json:"fullname"`
		}
		if err := json.Unmarshal(resp, &a); err != nil || a.Fullname != records[i]["fullname"] {
			return fmt.Errorf("update %d answered %s (%v)", i, resp, err)
		}
		return nil
	})
	h3 := head(t, env)
	if got := events(h2.Commit, h3.Commit); got != uint64(changed) {
		t.Fatalf("re-sending with %d changed records appended %d events", changed, got)
	}

	// 4. The same three steps for another provider's accounts through
	// POST /accounts/bulk, one request each, beside the per-record API.
	bulkProv := mustProvider(t, env, "Sync bulk")
	for i := range records {
		records[i]["provider"] = bulkProv
		records[i]["fullname"] = fmt.Sprintf("Subscriber %d", i)
	}
	bulkPhase := func(name string, wantResult string, wantEvents uint64) {
		t.Helper()
		var buf bytes.Buffer
		for _, r := range records {
			data, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			buf.Write(data)
			buf.WriteByte('\n')
		}
		before := head(t, env)
		started := time.Now()
		req, err := http.NewRequest(http.MethodPost, env.URL+"/api/provider/accounts/bulk", &buf)
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(env.SuperLogin, env.SuperPassword)
		req.Header.Set("Content-Type", "application/x-ndjson")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		results := map[string]int{}
		dec := json.NewDecoder(resp.Body)
		for {
			var line struct {
				Status int
				Result string
			}
			if err := dec.Decode(&line); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			results[fmt.Sprint(line.Status, " ", line.Result)]++
		}
		resp.Body.Close()
		took := time.Since(started)
		got := events(before.Commit, head(t, env).Commit)
		t.Logf("bulk %-6s %7d accounts, one request: %8.2fs, %7.0f records/s, %7d events appended, results %v",
			name, n, took.Seconds(), float64(n)/took.Seconds(), got, results)
		if wantResult != "" && results["200 "+wantResult] != n {
			t.Fatalf("bulk %s: results %v, want %d × %s", name, results, n, wantResult)
		}
		if wantEvents != 0 && got < wantEvents || wantEvents == 0 && got != 0 {
			t.Fatalf("bulk %s appended %d events, want %d", name, got, wantEvents)
		}
	}
	bulkPhase("create", "created", uint64(2*n))
	bulkPhase("resend", "unchanged", 0)
	for i := range records {
		if i%10 == 3 {
			records[i]["fullname"] = fmt.Sprintf("Subscriber %d (moved)", i)
		}
	}
	before := head(t, env)
	bulkPhase("change", "", uint64(changed))
	if got := events(before.Commit, head(t, env).Commit); got != uint64(changed) {
		t.Fatalf("bulk re-send with %d changed records appended %d events", changed, got)
	}

	// The list agrees.
	l := superClient(env).ok(t, http.MethodGet, fmt.Sprintf("/accounts?provider=%d&limit=1", prov), nil)
	if l.int(t, "total") != int64(n) {
		t.Fatalf("list total %v, want %d", l["total"], n)
	}
	started := time.Now()
	status, body, err := syncDo(hc, env, http.MethodGet, fmt.Sprintf("/api/provider/accounts?provider=%d", prov), nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("full list: %d %v", status, err)
	}
	t.Logf("list     %7d accounts in one response: %.2fs, %d bytes", n, time.Since(started).Seconds(), len(body))
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// syncDo sends one request of the sync job as the superadmin.
func syncDo(hc *http.Client, env *nodetest.Env, method, path string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, env.URL+path, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	req.SetBasicAuth(env.SuperLogin, env.SuperPassword)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}
