package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/testkit/testutil"
	"tvsm/projections/stats"
	statsembedded "tvsm/projections/stats/embedded"
)

// rebuildJob is a job as GET /api/admin/rebuilds/{id} shows it.
type rebuildJob struct {
	ID              string
	Target          string
	Verify          bool
	State           string
	Phase           string
	AppliedEvents   uint64 `json:"applied_events"`
	Through, Head   uint64
	Rate            float64
	Differences     []string
	DifferenceCount int `json:"difference_count"`
	Error           string
}

// startRebuild posts a rebuild (or a check) of target and returns the job.
func startRebuild(t *testing.T, env *nodetest.Env, target string, verify bool) rebuildJob {
	t.Helper()
	status, body := env.Super(t, http.MethodPost, "/api/admin/rebuilds", map[string]any{"target": target, "verify": verify})
	var job rebuildJob
	if status != http.StatusAccepted || json.Unmarshal(body, &job) != nil || job.ID == "" || job.Target != target || job.Verify != verify {
		t.Fatalf("POST rebuild %s (verify %v): %d %s", target, verify, status, body)
	}
	return job
}

// waitRebuild polls job id until it has ended and returns it; it fails the
// test unless it is done.
func waitRebuild(t *testing.T, env *nodetest.Env, id string) rebuildJob {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		status, body := env.Super(t, http.MethodGet, "/api/admin/rebuilds/"+id, nil)
		var job rebuildJob
		if status != http.StatusOK || json.Unmarshal(body, &job) != nil {
			t.Fatalf("GET rebuild %s: %d %s", id, status, body)
		}
		switch {
		case job.State == "done":
			return job
		case job.State != "running":
			t.Fatalf("rebuild %s ended %s: %s", id, job.State, body)
		case time.Now().After(deadline):
			t.Fatalf("rebuild %s still running after 2 minutes: %s", id, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// verify runs a check of target to its end and returns it.
func verify(t *testing.T, env *nodetest.Env, target string) rebuildJob {
	t.Helper()
	return waitRebuild(t, env, startRebuild(t, env, target, true).ID)
}

// writeAccounts creates accounts of provider through the bulk route, logins
// prefix-0 to prefix-(n-1), and returns their ids by login.
func writeAccounts(t *testing.T, env *nodetest.Env, provider int64, prefix string, n int) map[string]int64 {
	t.Helper()
	var body strings.Builder
	for i := range n {
		fmt.Fprintf(&body, `{"provider":%d,"login":"%s-%d","fullname":"Holder %d","pin_md5":"81dc9bdb52d04dc20036dbd8313ed055"}`+"\n", provider, prefix, i, i)
	}
	status, resp := env.DoHeader(t, http.MethodPost, "/api/provider/accounts/bulk", env.SuperLogin, env.SuperPassword,
		body.String(), http.Header{"Content-Type": {"application/x-ndjson"}})
	if status != http.StatusOK {
		t.Fatalf("bulk create: %d %s", status, resp)
	}
	ids := map[string]int64{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(resp)), "\n") {
		var r struct {
			Login  string
			Status int
			ID     int64
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.Status != http.StatusOK {
			t.Fatalf("bulk create: %s", line)
		}
		ids[r.Login] = r.ID
	}
	if len(ids) != n {
		t.Fatalf("bulk create: %d accounts, want %d", len(ids), n)
	}
	return ids
}

// load writes accounts and reads them back over HTTP until stop is called,
// counting what it did; every write must be acknowledged and every read
// answered.
type load struct {
	t       *testing.T
	env     *nodetest.Env
	wg      sync.WaitGroup
	stop    context.CancelFunc
	writes  atomic.Int64
	reads   atomic.Int64
	mu      sync.Mutex
	created map[int64]string // id → login
}

func startLoad(t *testing.T, env *nodetest.Env, provider int64, read int64) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{t: t, env: env, stop: cancel, created: map[int64]string{}}
	// ok reports a request's failure (the goroutines cannot end the test).
	ok := func(status int, body []byte) bool {
		if status != http.StatusOK {
			t.Errorf("a request while rebuilding: %d %s", status, body)
			return false
		}
		return true
	}
	for w := range 2 {
		l.wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				login := fmt.Sprintf("live-%d-%d", w, i)
				status, body := env.Super(t, http.MethodPost, "/api/provider/accounts", map[string]any{
					"provider": provider, "login": login, "fullname": "Live", "pin_md5": "81dc9bdb52d04dc20036dbd8313ed055"})
				var created struct{ ID int64 }
				if !ok(status, body) || json.Unmarshal(body, &created) != nil {
					return
				}
				l.mu.Lock()
				l.created[created.ID] = login
				l.mu.Unlock()
				l.writes.Add(1)
			}
		})
	}
	l.wg.Go(func() {
		for ctx.Err() == nil {
			if !ok(env.Super(t, http.MethodGet, "/api/provider/accounts/"+itoa(read), nil)) {
				return
			}
			if !ok(env.Super(t, http.MethodGet, "/api/provider/accounts?limit=20", nil)) {
				return
			}
			l.reads.Add(1)
		}
	})
	return l
}

func (l *load) end() {
	l.stop()
	l.wg.Wait()
}

// A read model rebuilt while the node serves takes over: the node answers
// reads and acknowledges writes throughout, answers from the new model
// afterwards (a corruption of the old one is gone), and a check finds the
// live model equal to the log before (but for the corruption) and after.
func TestRebuildReadModelWhileServing(t *testing.T) {
	env := nodetest.Start(t)
	provider := decodeID(t, superOK(t, env, http.MethodPost, "/api/admin/providers", map[string]any{"name": "Rebuild"}))
	ids := writeAccounts(t, env, provider, "base", 3000)
	victim := ids["base-7"]

	if job := verify(t, env, "readmodel"); job.DifferenceCount != 0 || job.AppliedEvents == 0 || job.Through == 0 || job.Through != job.Head {
		t.Fatalf("check of a clean node: %+v", job)
	}
	env.CorruptAccount(t, victim, "Corrupted")
	assertField(t, superOK(t, env, http.MethodGet, "/api/provider/accounts/"+itoa(victim), nil), "fullname", "Corrupted")
	job := verify(t, env, "readmodel")
	if job.DifferenceCount == 0 || !strings.Contains(strings.Join(job.Differences, "\n"), "Corrupted") {
		t.Fatalf("the check missed the corruption: %+v", job)
	}

	untouched := "/api/provider/accounts/" + itoa(ids["base-100"])
	before := superOK(t, env, http.MethodGet, untouched, nil)
	l := startLoad(t, env, provider, victim)
	for l.writes.Load() < 20 {
		time.Sleep(time.Millisecond)
	}
	writesBefore := l.writes.Load()
	job = waitRebuild(t, env, startRebuild(t, env, "readmodel", false).ID)
	writesDuring := l.writes.Load() - writesBefore
	l.end()
	if job.AppliedEvents < 3000 || job.Rate <= 0 {
		t.Fatalf("rebuild: %+v", job)
	}
	t.Logf("rebuild: %d events in the new model (%.0f/s); %d writes acknowledged and %d reads answered meanwhile",
		job.AppliedEvents, job.Rate, writesDuring, l.reads.Load())
	if writesDuring == 0 {
		t.Error("no write was acknowledged while the rebuild ran: the test proved nothing about serving meanwhile")
	}

	assertField(t, superOK(t, env, http.MethodGet, "/api/provider/accounts/"+itoa(victim), nil), "fullname", "Holder 7")
	if after := superOK(t, env, http.MethodGet, untouched, nil); string(after) != string(before) {
		t.Errorf("an account after the rebuild:\n%s\nbefore:\n%s", after, before)
	}
	for id, login := range l.created {
		assertField(t, superOK(t, env, http.MethodGet, "/api/provider/accounts/"+itoa(id), nil), "login", login)
	}
	if job := verify(t, env, "readmodel"); job.DifferenceCount != 0 {
		t.Fatalf("check after the rebuild: %+v", job)
	}
}

// viewingDays writes a few days of history through the APIs, the clock
// moving a day at a time: a tariff, subscribed accounts, a device of each
// logging in and reporting viewing.
func viewingDays(t *testing.T, env *nodetest.Env, clock *testutil.Clock, days int) (provider int64) {
	t.Helper()
	provider = decodeID(t, superOK(t, env, http.MethodPost, "/api/admin/providers", map[string]any{"name": "Stats"}))
	category := decodeID(t, superOK(t, env, http.MethodPost, "/api/admin/categories", map[string]any{"name": "News"}))
	channel := decodeID(t, superOK(t, env, http.MethodPost, "/api/admin/channels", map[string]any{"name": "One", "number": 1, "logo_url": "https://logo/1.png", "categories": []int64{category}}))
	tariff := decodeID(t, superOK(t, env, http.MethodPost, "/api/admin/tariffs", map[string]any{"provider": provider, "name": "Basic", "channels": []int64{channel}}))
	for day := range days {
		for i := range 3 {
			login := fmt.Sprintf("viewer-%d-%d", day, i)
			account := decodeID(t, superOK(t, env, http.MethodPost, "/api/provider/accounts", map[string]any{
				"provider": provider, "login": login, "fullname": login, "pin_md5": "81dc9bdb52d04dc20036dbd8313ed055"}))
			superOK(t, env, http.MethodPost, "/api/provider/account_subscriptions", map[string]any{"account": account, "tarif": tariff, "start": "2020-01-01T00:00:00Z"})
			status, body := env.Do(t, http.MethodPost, "/api/device/login", "", "", map[string]any{
				"provider": provider, "login": login, "password_md5": "81dc9bdb52d04dc20036dbd8313ed055",
				"device": map[string]any{"unique_id": "box-" + login, "class": "stb"}})
			var session struct{ Token string }
			if status != http.StatusOK || json.Unmarshal(body, &session) != nil {
				t.Fatalf("device login: %d %s", status, body)
			}
			status, body = env.DoHeader(t, http.MethodPost, "/api/device/viewing", "", "", map[string]any{
				"sessions": []map[string]any{{"channel_id": channel, "mode": "live", "start": clock.Now().Add(-time.Hour).Format(time.RFC3339), "seconds": 600 + i}},
			}, http.Header{"Authorization": {"Bearer " + session.Token}})
			if status/100 != 2 {
				t.Fatalf("viewing: %d %s", status, body)
			}
		}
		clock.Advance(24 * time.Hour)
	}
	return provider
}

// Statistics rebuilt while the node serves replace the old facts, on
// either fact store: a fact injected into the live store is reported by a
// check, and gone after the rebuild; the check finds none then.
func TestRebuildStatsWhileServing(t *testing.T) {
	for _, backend := range []struct {
		name string
		open func(t *testing.T, dir string) stats.Replacer
	}{
		{"embedded", func(t *testing.T, dir string) stats.Replacer {
			facts, err := statsembedded.Open(filepath.Join(dir, "stats"), statsembedded.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { facts.Close() })
			return facts
		}},
		{"clickhouse", func(t *testing.T, _ string) stats.Replacer {
			facts, _ := e2eFacts(t, "tvsm_rebuild_test")
			return facts
		}},
	} {
		t.Run(backend.name, func(t *testing.T) {
			dir := t.TempDir()
			testRebuildStats(t, dir, backend.open(t, dir))
		})
	}
}

func testRebuildStats(t *testing.T, dir string, facts stats.Replacer) {
	clock := testutil.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	env := nodetest.StartWith(t, nodetest.Options{Dir: dir, Clock: clock.Now, Stats: facts, StatsName: "test"})
	provider := viewingDays(t, env, clock, 4)
	waitStats(t, env)
	// The clock's day before is still open: the first event stamped with
	// the clock's day closes it, or the scheduler's job, which runs every
	// minute of real time, does. The load below writes such events, and a
	// slow machine reaches the minute: close it now, so that the answers
	// compared below cannot gain a day between them.
	env.Node.StatsScheduler.CloseDue()

	clean := verify(t, env, "stats")
	if clean.DifferenceCount != 0 || clean.AppliedEvents == 0 {
		t.Fatalf("check of clean statistics: %+v", clean)
	}
	today := stats.DayOf(clock.Now(), time.UTC)
	if err := facts.WriteViewing(context.Background(), []stats.ViewingFact{{Day: today - 2, Provider: provider, Account: 1, Device: 1,
		Class: "stb", Channel: 1, Live: true, Seconds: 4242, Position: 1 << 40}}); err != nil {
		t.Fatal(err)
	}
	job := verify(t, env, "stats")
	// Account 1 watched 600 s; the injected fact adds 4242.
	if job.DifferenceCount == 0 || !strings.Contains(strings.Join(job.Differences, "\n"), "Account:1 Channel:1 LiveSeconds:4842") {
		t.Fatalf("the check missed the injected fact: %+v", job)
	}

	// The Statistics API answers alike before, while and after the facts
	// are replaced (the injected viewing changes no subscription row).
	const subscriptions = "/api/stats/subscription?from=2026-02-01&to=2026-03-31"
	before := superOK(t, env, http.MethodGet, subscriptions, nil)
	if !strings.Contains(string(before), `"enabled_count"`) {
		t.Fatalf("no closed day in the statistics: %s", before)
	}
	l := startLoad(t, env, provider, 1)
	stop := make(chan struct{})
	var statsReads atomic.Int64
	l.wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if status, body := env.Super(t, http.MethodGet, subscriptions, nil); status != http.StatusOK || string(body) != string(before) {
				t.Errorf("statistics while rebuilding: %d %s\nwant %s", status, body, before)
				return
			}
			statsReads.Add(1)
		}
	})
	job = waitRebuild(t, env, startRebuild(t, env, "stats", false).ID)
	close(stop)
	l.end()
	if job.AppliedEvents == 0 || statsReads.Load() == 0 {
		t.Fatalf("rebuild: %+v, %d statistics reads meanwhile", job, statsReads.Load())
	}
	if after := superOK(t, env, http.MethodGet, subscriptions, nil); string(after) != string(before) {
		t.Fatalf("statistics after the rebuild:\n%s\nbefore:\n%s", after, before)
	}
	t.Logf("rebuild: %d events (%.0f/s); %d writes acknowledged, %d reads and %d statistics reads answered meanwhile",
		job.AppliedEvents, job.Rate, l.writes.Load(), l.reads.Load(), statsReads.Load())
	if job := verify(t, env, "stats"); job.DifferenceCount != 0 {
		t.Fatalf("check after the rebuild: %+v", job)
	}
	if job := verify(t, env, "readmodel"); job.DifferenceCount != 0 {
		t.Fatalf("read model check after the statistics rebuild: %+v", job)
	}

	// A log that ends with events the statistics skip (a catalog change):
	// a rebuild still goes through its head.
	superOK(t, env, http.MethodPost, "/api/admin/channels", map[string]any{"name": "Skipped by the statistics", "number": 90})
	waitStats(t, env)
	job = waitRebuild(t, env, startRebuild(t, env, "stats", false).ID)
	if head := env.Node.Runner.Progress().Position().Commit; job.Through != head || job.Head != head {
		t.Fatalf("rebuild after a catalog change: through %d of %d, want the head %d", job.Through, job.Head, head)
	}
}

// waitStats waits until the statistics have applied what the read model
// has.
func waitStats(t *testing.T, env *nodetest.Env) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := env.Node.StatsRunner.Progress().Wait(ctx, env.Node.Runner.Progress().Position()); err != nil {
		t.Fatalf("statistics did not catch up: %v", err)
	}
}

// Rebuilds are for superadmins; the body is checked field by field; one
// job per projection at a time.
func TestRebuildRequests(t *testing.T) {
	env := nodetest.Start(t)
	provider := decodeID(t, superOK(t, env, http.MethodPost, "/api/admin/providers", map[string]any{"name": "Scoped"}))
	superOK(t, env, http.MethodPost, "/api/admin/admins", map[string]any{"login": "scoped", "password": "scoped-password", "provider": provider})
	body := map[string]any{"target": "readmodel"}
	for _, c := range []struct {
		login, password string
		want            int
	}{{"", "", http.StatusUnauthorized}, {"root", "wrong", http.StatusUnauthorized}, {"scoped", "scoped-password", http.StatusForbidden}} {
		for _, req := range []struct{ method, path string }{{http.MethodPost, "/api/admin/rebuilds"}, {http.MethodGet, "/api/admin/rebuilds"}, {http.MethodGet, "/api/admin/rebuilds/x"}} {
			if status, resp := env.Do(t, req.method, req.path, c.login, c.password, body); status != c.want {
				t.Errorf("%s %s as %q: %d %s, want %d", req.method, req.path, c.login, status, resp, c.want)
			}
		}
	}
	for _, c := range []struct {
		body  any
		field string
	}{
		{map[string]any{"target": "everything"}, "target"},
		{map[string]any{}, "target"},
		{map[string]any{"target": 5}, "target"},
		{map[string]any{"target": "stats", "verfy": true}, "verfy"},
		{map[string]any{"target": "stats", "verify": "maybe"}, "verify"},
	} {
		status, resp := env.Super(t, http.MethodPost, "/api/admin/rebuilds", c.body)
		var e struct{ Fields map[string]string }
		if status != http.StatusBadRequest || json.Unmarshal(resp, &e) != nil || e.Fields[c.field] == "" {
			t.Errorf("POST %v: %d %s, want 400 naming %s", c.body, status, resp, c.field)
		}
	}
	if status, resp := env.Super(t, http.MethodPost, "/api/admin/rebuilds", "[]"); status != http.StatusBadRequest {
		t.Errorf("POST []: %d %s", status, resp)
	}
	if status, resp := env.Super(t, http.MethodGet, "/api/admin/rebuilds/nope", nil); status != http.StatusNotFound {
		t.Errorf("GET an unknown job: %d %s", status, resp)
	}

	// A second job of a projection while one runs: 409. The first waits
	// for the live model, held here.
	release := make(chan struct{})
	held := make(chan struct{})
	go env.Node.Model.Hold(func() error { close(held); <-release; return nil })
	<-held
	first := startRebuild(t, env, "readmodel", false)
	status, resp := env.Super(t, http.MethodPost, "/api/admin/rebuilds", map[string]any{"target": "readmodel", "verify": true})
	if status != http.StatusConflict {
		t.Errorf("a second job of the read model: %d %s, want 409", status, resp)
	}
	other := startRebuild(t, env, "stats", true) // another projection may run meanwhile
	close(release)
	waitRebuild(t, env, first.ID)
	waitRebuild(t, env, other.ID)
	var list struct{ Data []rebuildJob }
	if err := json.Unmarshal(superOK(t, env, http.MethodGet, "/api/admin/rebuilds", nil), &list); err != nil || len(list.Data) != 2 || list.Data[0].ID != other.ID {
		t.Errorf("GET /rebuilds: %+v %v, want the two jobs, newest first", list, err)
	}
}

// TestRebuildAfterErasure: once accounts are erased, a check of every
// projection rebuilt from the log finds the live node's answers, since the
// log reads the same through the seal (their personal values as
// "erased").
func TestRebuildAfterErasure(t *testing.T) {
	env := nodetest.Start(t)
	provider := decodeID(t, superOK(t, env, http.MethodPost, "/api/admin/providers", map[string]any{"name": "Erasures"}))
	ids := writeAccounts(t, env, provider, "subscriber", 40)
	for i := range 10 {
		id := ids["subscriber-"+itoa(int64(i))]
		superOK(t, env, http.MethodPost, "/api/provider/devices", map[string]any{"account": id, "unique_id": "box-" + itoa(int64(i))})
		if i%2 == 0 {
			superOK(t, env, http.MethodDelete, "/api/provider/accounts/"+itoa(id), nil)
		}
		superOK(t, env, http.MethodPost, "/api/provider/accounts/"+itoa(id)+"/erase?force=true", nil)
	}
	for _, target := range []string{"readmodel", "stats"} {
		if job := verify(t, env, target); job.DifferenceCount != 0 || target == "readmodel" && job.AppliedEvents == 0 {
			t.Errorf("check of %s after erasures: %+v", target, job)
		}
	}
	status, _ := env.Super(t, http.MethodGet, "/api/provider/accounts/"+itoa(ids["subscriber-3"]), nil)
	if status != http.StatusNotFound {
		t.Errorf("an erased account answers %d", status)
	}
}
