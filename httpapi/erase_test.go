package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
	"tvsm/internal/testkit/nodetest"
)

// eraseCanaries are personal values written through every Provider API
// route that takes them; none may reach the node's files in plain text.
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

// canaryHits returns each canary found in the files under dir (raw, and in
// base64 at each of its three alignments), with the file.
func canaryHits(t *testing.T, dir string, skip func(path string) bool) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || skip(path) {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for field, v := range eraseCanaries {
			for _, form := range canaryForms(v) {
				if bytes.Contains(data, []byte(form)) {
					rel, _ := filepath.Rel(dir, path)
					hits = append(hits, fmt.Sprintf("%s (%s as %q) in %s", field, v, form, rel))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
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

// TestEraseAccountForGood writes canaries through the Provider API, checks
// the event log and the key file hold none of them in plain text, erases
// the account and checks what the API, a restart and a rebuild then show.
func TestEraseAccountForGood(t *testing.T) {
	dir := t.TempDir()
	// Every line the node logs, at the finest level, goes through the
	// canary search too.
	var logged lockedBuffer
	opts := nodetest.Options{Dir: dir, Logger: slog.New(slog.NewJSONHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	env := nodetest.StartWith(t, opts)
	p := superClient(env)
	prov := mustProvider(t, env, "Acme")
	tariff := mustTariff(t, env, prov, "Basic")
	c := eraseCanaries

	body := accountBody(prov, c["login"])
	for _, k := range []string{"fullname", "main_address", "contract_info", "account_desc", "remote_custom_field"} {
		body[k] = c[k]
	}
	// With an Idempotency-Key, whose record keeps the answer for retries.
	keyed := http.Header{"Idempotency-Key": {"erase-canary-create"}}
	status, created := p.doHeader(t, http.MethodPost, "/accounts", body, keyed)
	if status != http.StatusOK {
		t.Fatalf("create: %d %s", status, created)
	}
	acc := decodeObj(t, created)
	id := acc.id(t)
	p.ok(t, http.MethodPut, fmt.Sprintf("/accounts/%d", id), map[string]any{"fullname": c["renamed"]})
	dev := p.ok(t, http.MethodPost, "/devices", map[string]any{"account": id, "unique_id": c["unique_id"], "mac": c["mac"]})
	status, _ = p.doHeader(t, http.MethodPost, "/account_network", map[string]any{"account": id, "network": c["network"], "description": c["description"]},
		http.Header{"Idempotency-Key": {"erase-canary-network"}})
	if status != http.StatusOK {
		t.Fatalf("network: %d", status)
	}
	sub := p.ok(t, http.MethodPost, "/account_subscriptions", map[string]any{"account": id, "tarif": tariff, "start": "2020-01-01T00:00:00Z"})
	other := p.ok(t, http.MethodPost, "/accounts", accountBody(prov, "bystander")).id(t)

	// The read model shows them (it is in memory), and nothing the node
	// wrote holds them in plain text: the event log, the key file, the
	// snapshots written when the node stops, the statistics.
	if got := p.ok(t, http.MethodGet, fmt.Sprintf("/accounts/%d", id), nil); got.str(t, "fullname") != c["renamed"] {
		t.Fatalf("account before erasure: %v", got)
	}
	noCanaries := func(when string) {
		t.Helper()
		// pebble compresses its tables, so a byte search can miss what they
		// hold: every stored event is also read back from the raw store.
		rawLogHits(t, filepath.Join(dir, "events"), when)
		if hits := canaryHits(t, dir, func(string) bool { return false }); len(hits) > 0 {
			t.Errorf("%s, the node's files hold personal data in plain text:\n%s", when, strings.Join(hits, "\n"))
		}
		for field, v := range eraseCanaries {
			for _, form := range canaryForms(v) {
				if bytes.Contains(logged.Bytes(), []byte(form)) {
					t.Errorf("%s, the node's log holds %s (%q)", when, field, form)
				}
			}
		}
		if logged.Len() == 0 {
			t.Error("the node logged nothing: the log search searched nothing")
		}
	}
	env.Close()
	noCanaries("before erasure")
	env = nodetest.StartWith(t, opts)
	p = superClient(env)
	if got := p.ok(t, http.MethodGet, fmt.Sprintf("/accounts/%d", id), nil); got.str(t, "main_address") != c["main_address"] {
		t.Fatalf("account after a restart from the sealed snapshot: %v", got)
	}

	// The export holds everything, in plain text for the operator.
	export := func(env *nodetest.Env) []byte {
		t.Helper()
		status, doc := env.Super(t, http.MethodGet, fmt.Sprintf("/api/provider/accounts/%d/export", id), nil)
		if status != http.StatusOK {
			t.Fatalf("export: %d %s", status, doc)
		}
		return doc
	}
	if doc := export(env); !bytes.Contains(doc, []byte(c["unique_id"])) || !bytes.Contains(doc, []byte(c["description"])) ||
		!bytes.Contains(doc, []byte(c["renamed"])) || !bytes.Contains(doc, []byte(`"type":"AccountCreated.v2"`)) {
		t.Errorf("export before erasure lacks the subscriber's data: %s", doc)
	}

	// An account still subscribed is not erased without force.
	erase := fmt.Sprintf("/accounts/%d/erase", id)
	p.fails(t, http.StatusConflict, http.MethodPost, erase, nil)
	p.fails(t, http.StatusBadRequest, http.MethodPost, erase+"?force=maybe", nil).field(t, "force")
	if got := p.ok(t, http.MethodPost, erase+"?force=true", nil); got.id(t) != id || got["erased"] != true {
		t.Fatalf("erase answered %v", got)
	}
	// Erasing again answers as the first time.
	p.ok(t, http.MethodPost, erase, nil)

	checkErased := func(t *testing.T, env *nodetest.Env) {
		t.Helper()
		p := superClient(env)
		p.fails(t, http.StatusNotFound, http.MethodGet, fmt.Sprintf("/accounts/%d", id), nil)
		p.fails(t, http.StatusNotFound, http.MethodGet, fmt.Sprintf("/devices/%d", dev.id(t)), nil)
		p.fails(t, http.StatusNotFound, http.MethodGet, fmt.Sprintf("/account_subscriptions/%d", sub.id(t)), nil)
		if l := p.ok(t, http.MethodGet, "/account_network?account="+fmt.Sprint(id), nil); len(l.list(t)) != 0 {
			t.Errorf("networks of the erased account: %v", l)
		}
		p.ok(t, http.MethodGet, fmt.Sprintf("/accounts/%d", other), nil) // the bystander is untouched
		// The history keeps the facts, every personal value erased.
		status, hist := env.Super(t, http.MethodGet, fmt.Sprintf("/api/provider/accounts/%d/history", id), nil)
		if status != http.StatusOK {
			t.Fatalf("history: %d %s", status, hist)
		}
		for field, v := range eraseCanaries {
			if bytes.Contains(hist, []byte(v)) {
				t.Errorf("history shows %s: %s", field, hist)
			}
		}
		if !bytes.Contains(hist, []byte(`"erased"`)) || !bytes.Contains(hist, []byte("account erased")) {
			t.Errorf("history does not show the erasure: %s", hist)
		}
		doc := export(env)
		for field, v := range eraseCanaries {
			if bytes.Contains(doc, []byte(v)) {
				t.Errorf("export after erasure shows %s", field)
			}
		}
		if !bytes.Contains(doc, []byte(`"account":null`)) || !bytes.Contains(doc, []byte(`"AccountErased.v1"`)) {
			t.Errorf("export after erasure: %s", doc)
		}
	}
	checkErased(t, env)
	// A retry of the keyed create no longer shows what it answered.
	status, replay := p.doHeader(t, http.MethodPost, "/accounts", body, keyed)
	for field, v := range eraseCanaries {
		if bytes.Contains(replay, []byte(v)) {
			t.Errorf("the keyed create's replay shows %s: %d %s", field, status, replay)
		}
	}
	// The login is free again.
	again := p.ok(t, http.MethodPost, "/accounts", accountBody(prov, c["login"]))
	if again.id(t) == id {
		t.Fatal("the erased account's id was reused")
	}
	p.ok(t, http.MethodDelete, fmt.Sprintf("/accounts/%d", again.id(t)), nil)

	// A restart from the snapshot gives the same answers, and no file of
	// the node holds the canaries.
	env.Close()
	noCanaries("after erasure")
	env = nodetest.StartWith(t, opts)
	checkErased(t, env)
	// The same from the log alone.
	env.Close()
	if err := os.Remove(filepath.Join(dir, "node", "readmodel.snapshot")); err != nil {
		t.Fatal(err)
	}
	env = nodetest.StartWith(t, opts)
	checkErased(t, env)
}

// lockedBuffer is a bytes.Buffer safe for the node's concurrent logging.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

func (b *lockedBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

// rawLogHits reads every event of the embedded store in dir, below the
// seal, and reports each canary found in its data or metadata.
func rawLogHits(t *testing.T, dir, when string) {
	t.Helper()
	store, err := embedded.Open(dir, embedded.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sub, err := store.SubscribeAll(ctx, eventstore.Beginning, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	events := 0
	for {
		b, err := sub.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range b.Events {
			events++
			for field, v := range eraseCanaries {
				for _, form := range canaryForms(v) {
					if bytes.Contains(e.Data, []byte(form)) || bytes.Contains(e.Metadata, []byte(form)) {
						t.Errorf("%s, %s@%d (%s) holds %s in plain text", when, e.Stream, e.Revision, e.Type, field)
					}
				}
			}
		}
		if b.CaughtUp {
			break
		}
	}
	if events < 10 {
		t.Errorf("%s, the raw log holds %d events: the search searched nothing", when, events)
	}
}
