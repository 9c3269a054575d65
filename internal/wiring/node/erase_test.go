package node_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
	"tvsm/eventstore/esdb"
	"tvsm/eventstore/esdb/esdbdouble"
	"tvsm/eventstore/record"
	"tvsm/internal/testkit/chtest"
	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/testkit/testutil"
)

// eraseCanaries are personal values written through every Provider API
// route that takes them; none may reach anything the node owns in plain
// text.
var eraseCanaries = map[string]string{
	"login":               "canary-login-7c3e",
	"fullname":            "Canary Person 7c3e",
	"main_address":        "7c3e Canary Lane",
	"contract_info":       "contract-7c3e",
	"account_desc":        "note-7c3e",
	"remote_custom_field": "ext-7c3e",
	"unique_id":           "canary-uid-7c3e",
	"mac":                 "02:7c:3e:00:00:01",
	"network":             "203.0.113.124/30",
	"description":         "canary office 7c3e",
	"renamed":             "Canary Renamed 7c3e",
}

// canaryForms are v raw and base64-encoded from each of three offsets
// (the stable middle part of each encoding).
func canaryForms(v string) []string {
	forms := []string{v}
	for pad := range 3 {
		enc := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", pad) + v))
		forms = append(forms, enc[4:len(enc)-4])
	}
	return forms
}

// canaryHits reports each canary found in b, naming where.
func canaryHits(b []byte, where string) []string {
	var hits []string
	for field, v := range eraseCanaries {
		for _, form := range canaryForms(v) {
			if bytes.Contains(b, []byte(form)) {
				hits = append(hits, fmt.Sprintf("%s (%q) in %s", field, form, where))
			}
		}
	}
	return hits
}

// fileHits searches every file under dir.
func fileHits(t *testing.T, dir string) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		hits = append(hits, canaryHits(data, rel)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// logHits reads every event of store below the seal: pebble compresses
// its tables, so a byte search of its files can miss what they hold.
func logHits(t *testing.T, store eventstore.Store) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sub, err := store.SubscribeAll(ctx, eventstore.Beginning, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var hits []string
	events := 0
	for {
		b, err := sub.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range b.Events {
			events++
			where := fmt.Sprintf("%s@%d (%s)", e.Stream, e.Revision, e.Type)
			hits = append(hits, canaryHits(e.Data, where)...)
			hits = append(hits, canaryHits(e.Metadata, where)...)
		}
		if b.CaughtUp {
			break
		}
	}
	if events < 10 {
		t.Fatalf("the raw log holds %d events: the search searched nothing", events)
	}
	return hits
}

// eraseBackend is where a canary test's node keeps its events and
// statistics, and how to search them below the node.
type eraseBackend struct {
	// options returns the node's options on dir; each start calls it.
	options func(t *testing.T, dir string) nodetest.Options
	// search returns the canaries found in the backend's own data (the
	// node is stopped).
	search func(t *testing.T, dir string) []string
}

// TestEraseAccountForGood writes canaries through every Provider API route
// that takes personal data, with traffic, snapshots, restarts and a
// rebuild, then erases the account, and searches everything the node owns
// each time: its files, its log (at debug level), the event log below the
// seal, and the backends' data. On the embedded store with statistics in
// ClickHouse, and on EventStoreDB's protocol double.
func TestEraseAccountForGood(t *testing.T) {
	t.Run("embedded store, statistics in ClickHouse", func(t *testing.T) {
		facts, conn := e2eFacts(t, "tvsm_erase_test")
		testEraseForGood(t, eraseBackend{
			options: func(t *testing.T, dir string) nodetest.Options {
				return nodetest.Options{Dir: dir, Stats: facts, StatsName: "clickhouse"}
			},
			search: func(t *testing.T, dir string) []string {
				store, err := embedded.Open(filepath.Join(dir, "events"), embedded.Options{Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
				defer store.Close()
				hits := logHits(t, store)
				return append(hits, clickHouseHits(t, conn, "tvsm_erase_test")...)
			},
		})
	})
	t.Run("EventStoreDB protocol double", func(t *testing.T) {
		doubleDir := t.TempDir()
		srv, err := esdbdouble.Start(doubleDir, "127.0.0.1:0", esdbdouble.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Close() })
		store, err := esdb.Open(context.Background(), srv.URL(), esdb.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = store.Close() })
		testEraseForGood(t, eraseBackend{
			options: func(t *testing.T, dir string) nodetest.Options {
				return nodetest.Options{Dir: dir, Store: store}
			},
			search: func(t *testing.T, _ string) []string {
				return append(logHits(t, store), fileHits(t, doubleDir)...)
			},
		})
	})
}

// clickHouseHits searches every string column of every table of db, and
// the ClickHouse server's files when the test owns the server.
func clickHouseHits(t *testing.T, conn driver.Conn, db string) []string {
	t.Helper()
	ctx := context.Background()
	rows, err := conn.Query(ctx, "SELECT table, name, type FROM system.columns WHERE database = ?", db)
	if err != nil {
		t.Fatal(err)
	}
	type column struct{ table, name, typ string }
	var columns []column
	tables := map[string]bool{}
	for rows.Next() {
		var c column
		if err := rows.Scan(&c.table, &c.name, &c.typ); err != nil {
			t.Fatal(err)
		}
		tables[c.table] = true
		columns = append(columns, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(tables) == 0 {
		t.Fatalf("ClickHouse database %s has no tables: the search searched nothing", db)
	}
	var hits []string
	for _, c := range columns {
		for field, v := range eraseCanaries {
			var n uint64
			q := fmt.Sprintf("SELECT count() FROM %s.%s WHERE position(toString(%s), ?) > 0", db, c.table, c.name)
			if err := conn.QueryRow(ctx, q, v).Scan(&n); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if n > 0 {
				hits = append(hits, fmt.Sprintf("%s in ClickHouse %s.%s (%s)", field, c.table, c.name, c.typ))
			}
		}
	}
	if srv := chtest.Shared(t).Server; srv != nil {
		hits = append(hits, fileHits(t, srv.Dir())...)
	}
	return hits
}

// testEraseForGood is TestEraseAccountForGood on one backend.
func testEraseForGood(t *testing.T, backend eraseBackend) {
	dir := t.TempDir()
	var logged testutil.SyncBuffer
	start := func() *nodetest.Env {
		o := backend.options(t, dir)
		o.Logger = slog.New(slog.NewJSONHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
		return nodetest.StartWith(t, o)
	}
	env := start()
	c := eraseCanaries
	provider := decodeID(t, superOK(t, env, http.MethodPost, "/api/admin/providers", map[string]any{"name": "Acme"}))
	tariff := decodeID(t, superOK(t, env, http.MethodPost, "/api/admin/tariffs", map[string]any{"provider": provider, "name": "Basic"}))
	body := map[string]any{"provider": provider, "login": c["login"], "pin_md5": "81dc9bdb52d04dc20036dbd8313ed055", "enabled": true}
	for _, k := range []string{"fullname", "main_address", "contract_info", "account_desc", "remote_custom_field"} {
		body[k] = c[k]
	}
	// With an Idempotency-Key, whose record keeps the answer for retries.
	keyed := http.Header{"Idempotency-Key": {"erase-canary-create"}}
	status, created := env.DoHeader(t, http.MethodPost, "/api/provider/accounts", env.SuperLogin, env.SuperPassword, body, keyed)
	if status != http.StatusOK {
		t.Fatalf("create: %d %s", status, created)
	}
	id := decodeID(t, created)
	account := "/api/provider/accounts/" + itoa(id)
	superOK(t, env, http.MethodPut, account, map[string]any{"fullname": c["renamed"]})
	device := decodeID(t, superOK(t, env, http.MethodPost, "/api/provider/devices", map[string]any{"account": id, "unique_id": c["unique_id"], "mac": c["mac"]}))
	status, _ = env.DoHeader(t, http.MethodPost, "/api/provider/account_network", env.SuperLogin, env.SuperPassword,
		map[string]any{"account": id, "network": c["network"], "description": c["description"]}, http.Header{"Idempotency-Key": {"erase-canary-network"}})
	if status != http.StatusOK {
		t.Fatalf("network: %d", status)
	}
	sub := decodeID(t, superOK(t, env, http.MethodPost, "/api/provider/account_subscriptions", map[string]any{"account": id, "tarif": tariff, "start": "2020-01-01T00:00:00Z"}))
	// Traffic: the subscriber's device logs in (its unique id and the
	// account's login on the wire) and reports viewing.
	status, resp := env.Do(t, http.MethodPost, "/api/device/login", "", "", map[string]any{"provider": provider, "login": c["login"],
		"password_md5": "81dc9bdb52d04dc20036dbd8313ed055", "device": map[string]any{"unique_id": c["unique_id"], "class": "stb"}})
	if status != http.StatusOK {
		t.Fatalf("device login: %d %s", status, resp)
	}
	bystander := decodeID(t, superOK(t, env, http.MethodPost, "/api/provider/accounts", map[string]any{"provider": provider, "login": "bystander", "pin_md5": "", "fullname": "Bystander"}))
	if !bytes.Contains(superOK(t, env, http.MethodGet, account, nil), []byte(c["renamed"])) {
		t.Fatal("the account does not show its name before erasure")
	}
	export := func(env *nodetest.Env) []byte { return superOK(t, env, http.MethodGet, account+"/export", nil) }
	if doc := export(env); !bytes.Contains(doc, []byte(c["unique_id"])) || !bytes.Contains(doc, []byte(c["description"])) ||
		!bytes.Contains(doc, []byte(`"type":"AccountCreated.v2"`)) || !bytes.Contains(doc, []byte(`"type":"DeviceLoggedIn.v1"`)) {
		t.Errorf("export before erasure lacks the subscriber's data: %s", doc)
	}

	// Nothing the node owns holds them in plain text: files (log, keys,
	// snapshots written at stop, statistics), its log, the backend.
	noCanaries := func(when string) {
		t.Helper()
		hits := append(fileHits(t, dir), backend.search(t, dir)...)
		hits = append(hits, canaryHits([]byte(logged.String()), "the node's log")...)
		if len(hits) > 0 {
			t.Errorf("%s, personal data in plain text:\n%s", when, strings.Join(hits, "\n"))
		}
		if logged.String() == "" {
			t.Error("the node logged nothing: the log search searched nothing")
		}
	}
	env.Close()
	noCanaries("before erasure")
	env = start()
	if !bytes.Contains(superOK(t, env, http.MethodGet, account, nil), []byte(c["main_address"])) {
		t.Fatal("the account after a restart from the sealed snapshot lacks its address")
	}

	// An instant between the writes and the erasure, on whole seconds (as_of
	// has no finer unit): the account as_of then exists, its values erased.
	nextSecond := func() {
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 50*time.Millisecond)))
	}
	nextSecond()
	asOf := time.Now().UTC().Format("2006-01-02T15:04:05-0700")
	nextSecond()

	// An account still subscribed is not erased without force; erasing
	// again answers as the first time.
	if status, _ := env.Super(t, http.MethodPost, account+"/erase", nil); status != http.StatusConflict {
		t.Fatalf("erase of a subscribed account without force: %d, want 409", status)
	}
	if status, _ := env.Super(t, http.MethodPost, account+"/erase?force=maybe", nil); status != http.StatusBadRequest {
		t.Fatalf("erase with force=maybe: %d, want 400", status)
	}
	if got := superOK(t, env, http.MethodPost, account+"/erase?force=true", nil); !bytes.Contains(got, []byte(`"erased":true`)) {
		t.Fatalf("erase answered %s", got)
	}
	superOK(t, env, http.MethodPost, account+"/erase", nil)

	checkErased := func(env *nodetest.Env) {
		t.Helper()
		for _, path := range []string{account, "/api/provider/devices/" + itoa(device), "/api/provider/account_subscriptions/" + itoa(sub)} {
			if status, _ := env.Super(t, http.MethodGet, path, nil); status != http.StatusNotFound {
				t.Errorf("GET %s after erasure: %d, want 404", path, status)
			}
		}
		superOK(t, env, http.MethodGet, "/api/provider/accounts/"+itoa(bystander), nil)
		then := superOK(t, env, http.MethodGet, account+"?as_of="+url.QueryEscape(asOf), nil)
		if hits := canaryHits(then, "as_of"); len(hits) > 0 || !bytes.Contains(then, []byte(`"login":"erased"`)) {
			t.Errorf("the account as_of before its erasure: %s", then)
		}
		for what, doc := range map[string][]byte{"history": superOK(t, env, http.MethodGet, account+"/history", nil), "export": export(env)} {
			if hits := canaryHits(doc, what); len(hits) > 0 {
				t.Errorf("after erasure: %s", strings.Join(hits, "; "))
			}
			if !bytes.Contains(doc, []byte(`"erased"`)) {
				t.Errorf("the %s shows no erased value: %s", what, doc)
			}
		}
	}
	checkErased(env)
	// A retry of the keyed create no longer shows what it answered, and
	// the login is free again.
	_, replay := env.DoHeader(t, http.MethodPost, "/api/provider/accounts", env.SuperLogin, env.SuperPassword, body, keyed)
	if hits := canaryHits(replay, "the keyed create's replay"); len(hits) > 0 {
		t.Errorf("after erasure: %s", strings.Join(hits, "; "))
	}
	again := decodeID(t, superOK(t, env, http.MethodPost, "/api/provider/accounts", map[string]any{"provider": provider, "login": c["login"], "pin_md5": "", "fullname": "Newcomer"}))
	superOK(t, env, http.MethodDelete, "/api/provider/accounts/"+itoa(again), nil)
	if job := verify(t, env, "readmodel"); job.DifferenceCount != 0 {
		t.Errorf("a check of the read model rebuilt from the log after erasure: %+v", job)
	}

	// Restarts from the snapshot and from the log alone answer the same,
	// and nothing holds the canaries.
	env.Close()
	noCanaries("after erasure")
	env = start()
	checkErased(env)
	env.Close()
	if err := os.Remove(filepath.Join(dir, "node", "readmodel.snapshot")); err != nil {
		t.Fatal(err)
	}
	checkErased(start())
}

// An account written before sealing (its events in plain text in the log)
// erased: its history shows its personal values as erased, also after a
// restart from the snapshot, though the log still holds them (a store
// rewrite would remove them).
func TestEraseAccountWrittenBeforeSealing(t *testing.T) {
	dir := t.TempDir()
	env := nodetest.StartWith(t, nodetest.Options{Dir: dir})
	provider := decodeID(t, superOK(t, env, http.MethodPost, "/api/admin/providers", map[string]any{"name": "Acme"}))
	raw := record.Log{Store: env.Store, Registry: env.Node.Registry} // below the seal: as an older version wrote it
	meta := domain.Metadata{OccurredAt: time.Now(), Actor: domain.SystemActor(), RequestID: "older-version"}
	res, err := raw.Record(context.Background(), domain.AccountStream(900), eventstore.NoStream,
		[]domain.Event{domain.AccountCreated{AccountID: 900, Provider: provider, Login: "legacy-login-5e1f", Fullname: "Legacy Person 5e1f", Enabled: true}},
		meta, record.Random())
	if err != nil {
		t.Fatal(err)
	}
	env.WaitApplied(t, res.Position)
	history := func(env *nodetest.Env) []byte {
		return superOK(t, env, http.MethodGet, "/api/provider/accounts/900/history", nil)
	}
	if h := history(env); !bytes.Contains(h, []byte("legacy-login-5e1f")) {
		t.Fatalf("history before erasure: %s", h)
	}
	superOK(t, env, http.MethodPost, "/api/provider/accounts/900/erase", nil)
	check := func(env *nodetest.Env) {
		t.Helper()
		if h := history(env); bytes.Contains(h, []byte("5e1f")) || !bytes.Contains(h, []byte(`"new":"erased"`)) {
			t.Errorf("history of an erased account written before sealing: %s", h)
		}
	}
	check(env)
	env.Close()
	env = nodetest.StartWith(t, nodetest.Options{Dir: dir})
	check(env)
}
