// Package nodetest starts a complete tvsm node for black-box tests: the real
// embedded event store in a temporary directory, the read model, the
// services and the HTTP API on a loopback test server, whose every API
// answer is checked against the API's OpenAPI document (apicheck).
package nodetest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
	"tvsm/eventstore/record"
	"tvsm/eventstore/sealed"
	"tvsm/internal/adapters/billing/billingtest"
	"tvsm/internal/platform/schedule"
	"tvsm/internal/platform/throttle"
	"tvsm/internal/testkit/apicheck"
	"tvsm/internal/wiring/node"
	"tvsm/projections"
	"tvsm/projections/stats"
	"tvsm/wsgateway"
)

// Superadmin credentials every Env starts with.
const (
	SuperLogin    = "root"
	SuperPassword = "root-password"
)

// Env is a running node and an HTTP client for it.
type Env struct {
	URL           string
	SuperLogin    string
	SuperPassword string
	Node          *node.Node
	// Store is the embedded store the node runs on, below the seal (what
	// its files hold); nil when it runs on another backend (Options.Store).
	Store  *embedded.Store
	Client *http.Client
	close  func()
	// backend is the store the node was started on, whatever it is.
	backend eventstore.Store
}

// Close stops the node and closes its store; the test's cleanup calls it
// too, so call it only to restart a node on the same Dir within a test.
func (e *Env) Close() { e.close() }

// Options adjust an Env; the zero value is the usual setup.
type Options struct {
	// Dir is the data directory (default t.TempDir()); reuse one to restart
	// a node on the same data.
	Dir    string
	Logger *slog.Logger
	Clock  func() time.Time
	// Setup runs once the node has started, before its HTTP server does:
	// tests mount routes there that the node does not mount yet.
	Setup func(*node.Node)
	// AdminLogins and DeviceLogins throttle failed logins. Zero limits are
	// generous here (1000 per login and address, 10000 per address and per
	// login a minute), so that tests failing logins on purpose are not
	// throttled; tests of the throttle set their own.
	AdminLogins, DeviceLogins throttle.GuardOptions
	// BcryptCost hashes admin passwords (default bcrypt.MinCost, to keep
	// tests fast; benchmarks of logins pass bcrypt.DefaultCost).
	BcryptCost int
	// PasswordChecks bounds the admin password checks at once
	// (node.Options.PasswordChecks). Zero is generous here (64), so that
	// tests logging in concurrently are not refused; tests of the bound set
	// their own.
	PasswordChecks int
	// PasswordCheckWait bounds a password check's wait for its turn
	// (node.Options.PasswordCheckWait; zero: the node's default).
	PasswordCheckWait time.Duration
	// PasswordCache bounds the cache of verified admin credentials
	// (node.Options.PasswordCache); negative turns it off, so that every
	// login needs a password check.
	PasswordCache int
	// DeviceTokenTTL is the lifetime of device tokens (default 30 days).
	DeviceTokenTTL time.Duration
	// Store, when set, is used instead of a new embedded store in Dir, and
	// is left open at the end: another backend (an EventStoreDB client),
	// or one that nodes share (Share does that).
	Store eventstore.Store
	// Timers drives the command dispatcher's delivery rules (default the
	// system clock); pass the testutil.Clock whose Now is Clock.
	Timers schedule.Clock
	// Billing turns the billing proxy on (node.BillingOptions). Unless it
	// sets AllowedNetworks (non-nil, empty for none), billing may be
	// reached on loopback, where billingtest servers listen.
	Billing node.BillingOptions
	// Sockets configures the device websocket hub (node.Options.Sockets).
	Sockets wsgateway.Options
	// ReadYourWritesTimeout is node.Options.ReadYourWritesTimeout (0: the
	// node's default).
	ReadYourWritesTimeout time.Duration
	// DefaultDeviceLimit is node.Options.DefaultDeviceLimit (0: the
	// node's default, negative: none).
	DefaultDeviceLimit int
	// Stats and StatsName choose the statistics fact store (default the
	// embedded one in Dir), as node.Options does.
	Stats     stats.FactStore
	StatsName string
	// Share is a running node whose event store, key store and master key
	// this node shares: two nodes of one deployment. It overrides Store.
	Share *Env
	// BackupReadModelWait is node.Options.BackupReadModelWait (0: the
	// node's default).
	BackupReadModelWait time.Duration
	// MasterKey is the node's master key (default: generated beside its
	// data directory, or SharedMasterKey on a store that can tombstone).
	MasterKey *sealed.MasterKey
}

// generous returns o with zero limits raised for tests.
func generous(o throttle.GuardOptions) throttle.GuardOptions {
	if o.LoginLimit == 0 {
		o.LoginLimit = 1000
	}
	if o.AddressLimit == 0 {
		o.AddressLimit = 10000
	}
	if o.LoginTotalLimit == 0 {
		o.LoginTotalLimit = 10000
	}
	return o
}

// SharedMasterKey is the master key of the nodes tests start on a store
// they give (Options.Store), which several nodes may share.
var SharedMasterKey = func() *sealed.MasterKey {
	m, err := sealed.NewMasterKey([]byte("tvsm test master key, 32 bytes!!"))
	if err != nil {
		panic(err)
	}
	return m
}()

// Start starts a node with default options; see StartWith.
func Start(t testing.TB) *Env { return StartWith(t, Options{}) }

// StartWith starts a node and stops it (and closes its store) when the test
// ends. Passwords are hashed at bcrypt's minimum cost unless o says.
func StartWith(t testing.TB, o Options) *Env {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var keys sealed.KeyStore
	if o.Share != nil {
		o.Store, keys, o.MasterKey = o.Share.backend, o.Share.Node.Keys.Store(), o.Share.Node.Keys.Master()
	}
	store, closeStore := o.Store, func() error { return nil }
	// Nodes on a store that holds the keys in streams (a shared one) share
	// a master key; a node on its own store generates one beside its data
	// directory, as in production.
	if _, shared := any(store).(eventstore.Tombstoner); shared && o.MasterKey == nil {
		o.MasterKey = SharedMasterKey
	}
	if store == nil {
		opened, err := embedded.Open(filepath.Join(o.Dir, "events"), embedded.Options{Logger: o.Logger})
		if err != nil {
			t.Fatalf("nodetest: open store: %v", err)
		}
		store, closeStore = opened, opened.Close
	}
	embeddedStore, _ := store.(*embedded.Store)
	if o.Billing.AllowedNetworks == nil {
		o.Billing.AllowedNetworks = billingtest.LoopbackNetworks()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := node.Start(ctx, store, node.Options{
		DataDir: filepath.Join(o.Dir, "node"), Logger: o.Logger,
		AdminLogin: SuperLogin, AdminPassword: SuperPassword,
		BcryptCost: cmp.Or(o.BcryptCost, bcrypt.MinCost), Clock: o.Clock,
		AdminLogins: generous(o.AdminLogins), DeviceLogins: generous(o.DeviceLogins), DeviceTokenTTL: o.DeviceTokenTTL,
		PasswordChecks:    cmp.Or(o.PasswordChecks, 64),
		PasswordCheckWait: o.PasswordCheckWait,
		PasswordCache:     o.PasswordCache,
		Timers:            o.Timers, Billing: o.Billing, NodeName: "test", Sockets: o.Sockets,
		Stats: o.Stats, StatsName: o.StatsName, DefaultDeviceLimit: o.DefaultDeviceLimit,
		ReadYourWritesTimeout: o.ReadYourWritesTimeout, MasterKey: o.MasterKey, Keys: keys,
		BackupReadModelWait: o.BackupReadModelWait,
	})
	if err != nil {
		_ = closeStore()
		t.Fatalf("nodetest: start node: %v", err)
	}
	if o.Setup != nil {
		o.Setup(n)
	}
	// Every answer of an API is checked against its OpenAPI document.
	srv := httptest.NewServer(apicheck.Handler(t, n.Handler()))
	var once sync.Once
	closeEnv := func() {
		once.Do(func() {
			srv.Close()
			if err := n.Close(); err != nil {
				t.Errorf("nodetest: close node: %v", err)
			}
			if err := closeStore(); err != nil {
				t.Errorf("nodetest: close store: %v", err)
			}
		})
	}
	t.Cleanup(closeEnv)
	return &Env{URL: srv.URL, SuperLogin: SuperLogin, SuperPassword: SuperPassword, Node: n, Store: embeddedStore, Client: srv.Client(), close: closeEnv,
		backend: store}
}

// Do sends a request with Basic credentials (none when login is empty) and
// returns the status and body. body is sent as is when it is []byte or
// string, JSON-encoded otherwise, and omitted when nil. Requests with a
// body, and every request but a GET or HEAD, declare Content-Type:
// application/json.
func (e *Env) Do(t testing.TB, method, path, login, password string, body any) (int, []byte) {
	t.Helper()
	return e.DoHeader(t, method, path, login, password, body, nil)
}

// DoHeader is Do with extra request headers (Idempotency-Key, ...); a
// header given with no values is left out (Content-Type: nil sends none).
func (e *Env) DoHeader(t testing.TB, method, path, login, password string, body any, header http.Header) (int, []byte) {
	t.Helper()
	resp, data := e.DoResponse(t, method, path, login, password, body, header)
	return resp.StatusCode, data
}

// DoResponse is DoHeader returning the whole response (its body already
// read into the bytes returned and closed), for tests of response headers.
func (e *Env) DoResponse(t testing.TB, method, path, login, password string, body any, header http.Header) (*http.Response, []byte) {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	case string:
		r = bytes.NewReader([]byte(b))
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("nodetest: encode body: %v", err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.URL+path, r)
	if err != nil {
		t.Fatalf("nodetest: %v", err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil || (method != http.MethodGet && method != http.MethodHead) {
		// As TVIP's SDK does: the Admin and Provider APIs refuse a POST
		// (with a body or not) that does not declare JSON.
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range header {
		if vs == nil {
			delete(req.Header, k)
			continue
		}
		req.Header[k] = vs
	}
	if login != "" {
		req.SetBasicAuth(login, password)
	}
	resp, err := e.Client.Do(req)
	if err != nil {
		t.Fatalf("nodetest: %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("nodetest: read %s %s: %v", method, path, err)
	}
	return resp, data
}

// Super is Do as the bootstrapped superadmin.
func (e *Env) Super(t testing.TB, method, path string, body any) (int, []byte) {
	t.Helper()
	return e.Do(t, method, path, e.SuperLogin, e.SuperPassword, body)
}

// SignIn opens an admin console session with login's credentials (POST
// /api/admin/session) and returns its token; Bearer makes the header that
// sends it.
func (e *Env) SignIn(t testing.TB, login, password string) string {
	t.Helper()
	status, data := e.Do(t, http.MethodPost, "/api/admin/session", login, password, nil)
	var s struct{ Token string }
	if status != http.StatusOK || json.Unmarshal(data, &s) != nil || s.Token == "" {
		t.Fatalf("nodetest: sign in %s: %d %s", login, status, data)
	}
	return s.Token
}

// Bearer returns the Authorization header of a session token.
func Bearer(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }

// AppendEvent appends ev to stream directly, as a part of tvsm without an
// HTTP route would (a command send, a device session), and waits until the
// node's read model has applied it. It returns the event's position.
func (e *Env) AppendEvent(t testing.TB, stream string, ev domain.Event) eventstore.Position {
	t.Helper()
	rec := record.Log{Store: e.Node.Store, Registry: e.Node.Registry} // through the seal, as the node writes
	meta := domain.Metadata{OccurredAt: time.Now(), Actor: domain.SystemActor(), RequestID: "nodetest"}
	res, err := rec.Record(context.Background(), stream, eventstore.Any, []domain.Event{ev}, meta, record.Random())
	if err != nil {
		t.Fatalf("nodetest: record %T in %s: %v", ev, stream, err)
	}
	e.WaitApplied(t, res.Position)
	return res.Position
}

// WaitApplied waits (at most 10 s) until the node's read model has applied
// pos; a node sharing another's Store waits for its own model.
func (e *Env) WaitApplied(t testing.TB, pos eventstore.Position) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Node.Runner.Progress().Wait(ctx, pos); err != nil {
		t.Fatalf("nodetest: read model did not apply %v: %v", pos, err)
	}
}

// CorruptAccount makes the node's live read model show account id under
// another full name, by applying an event that is not in the log (what a
// bug of the projection would leave behind): a check of the read model
// reports it, and a rebuild repairs it.
func (e *Env) CorruptAccount(t testing.TB, id int64, fullname string) {
	t.Helper()
	stream := domain.AccountStream(id)
	ref, _ := domain.ParseStream(stream)
	now := time.Now().UTC()
	ev := &projections.Event{
		RecordedEvent: &eventstore.RecordedEvent{Stream: stream, Type: domain.AccountUpdatedType, Revision: 1 << 20,
			Position: e.Node.Model.Position(), Created: now},
		StreamRef: ref, Payload: domain.AccountUpdated{AccountID: id, Fullname: domain.Some(fullname)}, OccurredAt: now,
	}
	err := e.Node.Model.Apply(context.Background(), func(yield func(*projections.Event) bool) { yield(ev) }, projections.Live)
	if err != nil {
		t.Fatalf("nodetest: corrupt account %d: %v", id, err)
	}
}

// Adopt moves the data of a node as tvsm serve and tvsm demo lay it out
// (DATA/events, the rest of DATA, and the master key DATA.master-key beside
// it) into dir as StartWith lays it out (dir/events, dir/node,
// dir/node.master-key), for StartWith(Options{Dir: dir}).
func Adopt(t testing.TB, data, dir string) {
	t.Helper()
	moves := [][2]string{
		{filepath.Join(data, "events"), filepath.Join(dir, "events")},
		{data, filepath.Join(dir, "node")},
		{node.DefaultMasterKeyFile(data), node.DefaultMasterKeyFile(filepath.Join(dir, "node"))},
	}
	for _, m := range moves {
		if err := os.Rename(m[0], m[1]); err != nil {
			t.Fatal(err)
		}
	}
}
