package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
	"tvsm/eventstore/memory"
	"tvsm/internal/testkit/testutil"
	"tvsm/wsgateway"
	"tvsm/wsgateway/dispatch"
)

// t0 is where every test clock starts.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// env is one event store and one clock shared by the nodes of a test.
type env struct {
	store eventstore.Store
	reg   *domain.Registry
	clock *testutil.Clock
	sends atomic.Int64
	nodes []*node
	// tune, when set, changes the options of the nodes started after.
	tune func(*dispatch.Options)
}

// newEnv is an env on the in-memory store: the tests check what the
// dispatcher does with the log, which needs the store's contract, not its
// disk.
func newEnv(t testing.TB) *env {
	t.Helper()
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	return newEnvOn(store)
}

// newEmbeddedEnv is an env on the embedded store in a temporary directory,
// for benchmarks of delivery as it runs in production (the claim append
// waits for an fsync).
func newEmbeddedEnv(t testing.TB) *env {
	t.Helper()
	store, err := embedded.Open(t.TempDir(), embedded.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return newEnvOn(store)
}

func newEnvOn(store eventstore.Store) *env {
	reg := domain.NewRegistry()
	domain.RegisterEvents(reg)
	return &env{store: store, reg: reg, clock: testutil.NewClock(t0)}
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// node is a dispatcher wired the way a tvsm node wires it: New, Run in a
// goroutine, the device websocket route calling Hub().Upgrade with the
// authenticated identity, Close on shutdown. Here the identity comes from
// the query (?device=&account=&provider=) instead of a token.
type node struct {
	name    string
	dir     string
	d       *dispatch.Dispatcher
	srv     *httptest.Server
	url     string
	runErr  chan error
	stopped bool
	opened  sync.Map // Conn.Seq of connections whose OnOpen hooks ran
}

// startNode starts a node with its snapshot in dir and waits until it has
// caught up with the log.
func (e *env) startNode(t testing.TB, name, dir string, hub wsgateway.Options) *node {
	t.Helper()
	hub.CloseGrace = 100 * time.Millisecond
	n := &node{name: name, dir: dir, runErr: make(chan error, 1)}
	// Hooks given in the hub options run after the dispatcher's own.
	hub.OnOpen = func(c *wsgateway.Conn) { n.opened.Store(c.Seq(), true) }
	opts := dispatch.Options{
		Store: e.store, Registry: e.reg, Hub: hub, Clock: e.clock, Node: name, Logger: quiet(), DataDir: dir,
	}
	if e.tune != nil {
		e.tune(&opts)
	}
	d, err := dispatch.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	n.d = d
	go func() { n.runErr <- d.Run(context.Background()) }()
	n.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		num := func(k string) int64 { v, _ := strconv.ParseInt(q.Get(k), 10, 64); return v }
		_ = d.Hub().Upgrade(w, r, wsgateway.Identity{
			Device: num("device"), Account: num("account"), Provider: num("provider"), Address: "127.0.0.1",
		})
	}))
	n.url = "ws" + strings.TrimPrefix(n.srv.URL, "http") + "/ws"
	t.Cleanup(func() { n.stop(t) })
	waitFor(t, func() bool { return d.CaughtUp() }, name+" caught up")
	e.nodes = append(e.nodes, n)
	return n
}

// stop closes the node as a shutdown does and checks that Run ended.
func (n *node) stop(t testing.TB) {
	t.Helper()
	if n.stopped {
		return
	}
	n.stopped = true
	if err := n.d.Close(); err != nil {
		t.Errorf("close %s: %v", n.name, err)
	}
	select {
	case err := <-n.runErr:
		if err != nil {
			t.Errorf("run %s: %v", n.name, err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("run %s did not return after Close", n.name)
	}
	n.srv.Close()
}

// settle waits until the node has handled everything due.
func (n *node) settle(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.d.Settle(ctx); err != nil {
		t.Fatal(err)
	}
}

// advance moves the clock and lets every running node handle what came due.
func (e *env) advance(t testing.TB, d time.Duration) {
	t.Helper()
	e.clock.Advance(d)
	for _, n := range e.nodes {
		if !n.stopped {
			n.settle(t)
		}
	}
}

// spec is a command of a test send.
type spec struct {
	kind     domain.CommandKind
	msgType  domain.MessageType
	text     string
	postTime time.Time
	ttl      time.Time
}

func message(text string) spec {
	return spec{kind: domain.CommandUserMessage, msgType: domain.MessageNotify, text: text}
}

func confirmMessage(text string) spec {
	return spec{kind: domain.CommandUserMessage, msgType: domain.MessageConfirm, text: text}
}

func (s spec) at(t time.Time) spec     { s.postTime = t; return s }
func (s spec) until(t time.Time) spec  { s.ttl = t; return s }
func kind(k domain.CommandKind) spec   { return spec{kind: k} }
func (s spec) object() json.RawMessage { return mustJSON(s.fields()) }

// fields is the command object as a provider sends it.
func (s spec) fields() map[string]any {
	m := map[string]any{"command": string(s.kind)}
	if s.msgType != "" {
		m["type"], m["text"] = string(s.msgType), s.text
	}
	if s.kind == domain.CommandSwitchToChannel {
		m["channel"] = 7
	}
	if !s.postTime.IsZero() {
		m["post_time"] = s.postTime.Format("2006-01-02T15:04:05")
	}
	if !s.ttl.IsZero() {
		m["ttl"] = s.ttl.Unix()
	}
	return m
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// issue appends a send as the provider endpoint does and waits until every
// running node has applied it (and run its delivery round).
func (e *env) issue(t testing.TB, to domain.Recipients, ids []int64, specs ...spec) int64 {
	t.Helper()
	issued := e.prepare(t, to, ids, specs...)
	e.publish(t, issued)
	return issued.SendID
}

// prepare decides a send at the clock's time without appending it.
func (e *env) prepare(t testing.TB, to domain.Recipients, ids []int64, specs ...spec) domain.CommandsIssued {
	t.Helper()
	cmd := domain.SendCommands{SendID: e.sends.Add(1), Recipients: to, IDs: ids}
	for _, s := range specs {
		c := domain.CommandSpec{Kind: s.kind, MessageType: s.msgType, Text: s.text, PostTime: s.postTime, TTL: s.ttl, Object: s.object()}
		if s.kind == domain.CommandSwitchToChannel {
			c.Channel = 7
		}
		cmd.Commands = append(cmd.Commands, c)
	}
	issued, err := domain.IssueCommands(cmd, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	return issued
}

// publishAsync appends a prepared send without waiting for the nodes.
func (e *env) publishAsync(t testing.TB, issued domain.CommandsIssued) eventstore.Position {
	t.Helper()
	return e.appendEvent(t, domain.CommandStream(issued.SendID), eventstore.NoStream, issued)
}

// publish appends a prepared send and waits until the running nodes have
// applied it.
func (e *env) publish(t testing.TB, issued domain.CommandsIssued) {
	t.Helper()
	pos := e.publishAsync(t, issued)
	for _, n := range e.nodes {
		if !n.stopped {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := n.d.WaitApplied(ctx, pos)
			cancel()
			if err != nil {
				t.Fatalf("%s did not apply send %d: %v", n.name, issued.SendID, err)
			}
		}
	}
}

// appendEvent appends one event as an admin would.
func (e *env) appendEvent(t testing.TB, stream string, expect eventstore.Revision, ev domain.Event) eventstore.Position {
	t.Helper()
	typ, data, err := e.reg.Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	md, err := domain.EncodeMetadata(domain.Envelope{OccurredAt: e.clock.Now(), Actor: domain.AdminActor("admin"), RequestID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.store.Append(context.Background(), stream, expect,
		eventstore.EventData{ID: eventstore.NewEventID(), Type: typ, Data: data, Metadata: md})
	if err != nil {
		t.Fatal(err)
	}
	return res.Position
}

// events returns the decoded events of stream.
func (e *env) events(t testing.TB, stream string) []domain.Event {
	t.Helper()
	recs, err := e.store.ReadStream(context.Background(), stream, eventstore.Start, 0)
	if errors.Is(err, eventstore.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	out := make([]domain.Event, len(recs))
	for i, r := range recs {
		if out[i], err = e.reg.Decode(r.Type, r.Data); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// waitEvents polls stream until cond holds for its events.
func (e *env) waitEvents(t testing.TB, stream string, what string, cond func([]domain.Event) bool) []domain.Event {
	t.Helper()
	var evs []domain.Event
	waitFor(t, func() bool { evs = e.events(t, stream); return cond(evs) }, what)
	return evs
}

// envelope is a server → device message.
type envelope struct {
	Type    string         `json:"type"`
	ID      string         `json:"id"`
	Command map[string]any `json:"command"`
}

// device is a real websocket client. A goroutine reads every message into
// msgs, then the close code into closed.
type device struct {
	id     int64
	n      *node
	ws     *websocket.Conn
	msgs   chan envelope
	closed chan int // the close code received, -1 without a close frame
	wmu    sync.Mutex
}

// connect dials n as device id of account and provider and waits until the
// hub has it.
func (n *node) connect(t testing.TB, id, account, provider int64) *device {
	t.Helper()
	return n.connectWith(t, id, account, provider, nil, true)
}

// connectWith dials with dialer (nil: default); read starts the reader.
func (n *node) connectWith(t testing.TB, id, account, provider int64, dialer *websocket.Dialer, read bool) *device {
	t.Helper()
	if dialer == nil {
		dialer = &websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	}
	url := n.url + "?device=" + strconv.FormatInt(id, 10) + "&account=" + strconv.FormatInt(account, 10) +
		"&provider=" + strconv.FormatInt(provider, 10)
	old, _ := n.d.Hub().Lookup(id)
	ws, resp, err := dialer.Dial(url, nil)
	if err != nil {
		t.Fatalf("dial device %d: %v", id, err)
	}
	_ = resp.Body.Close()
	dev := &device{id: id, n: n, ws: ws, msgs: make(chan envelope, 4096), closed: make(chan int, 1)}
	t.Cleanup(func() { _ = ws.Close() })
	if read {
		go dev.read()
	}
	waitFor(t, func() bool {
		c, ok := n.d.Hub().Lookup(id)
		if !ok || c == old {
			return false
		}
		_, opened := n.opened.Load(c.Seq())
		return opened
	}, "device registered")
	return dev
}

func (dev *device) read() {
	for {
		_, data, err := dev.ws.ReadMessage()
		if err != nil {
			code := -1
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				code = ce.Code
			}
			dev.closed <- code
			close(dev.msgs)
			return
		}
		var env envelope
		if json.Unmarshal(data, &env) == nil {
			dev.msgs <- env
		}
	}
}

// next returns the next command message.
func (dev *device) next(t testing.TB) envelope {
	t.Helper()
	select {
	case m, ok := <-dev.msgs:
		if !ok {
			t.Fatalf("device %d: connection ended while waiting for a message", dev.id)
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatalf("device %d: no message", dev.id)
	}
	return envelope{}
}

// nothingMore checks that the device has been sent nothing (else) so far:
// after the node has settled, a marker sent through the same queue must be
// the next message.
func (dev *device) nothingMore(t testing.TB) {
	t.Helper()
	dev.n.settle(t)
	if !dev.n.d.Hub().Send(dev.id, []byte(`{"type":"marker","id":"marker"}`)) {
		t.Fatalf("device %d: not connected for the marker", dev.id)
	}
	if m := dev.next(t); m.Type != "marker" {
		t.Fatalf("device %d: got %s %s, want nothing", dev.id, m.Type, m.ID)
	}
}

// reply sends an ack or confirm.
func (dev *device) reply(t testing.TB, typ, id string) {
	t.Helper()
	dev.wmu.Lock()
	defer dev.wmu.Unlock()
	if err := dev.ws.WriteJSON(map[string]string{"type": typ, "id": id}); err != nil {
		t.Fatal(err)
	}
}

// hangUp closes the connection from the device side and waits until the
// node has seen it go.
func (dev *device) hangUp(t testing.TB) {
	t.Helper()
	dev.wmu.Lock()
	_ = dev.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye"), time.Now().Add(time.Second))
	dev.wmu.Unlock()
	waitFor(t, func() bool { return !dev.n.d.Hub().Connected(dev.id) }, "device gone")
}

// closeCode waits for the end of the connection and returns the close code.
func (dev *device) closeCode(t testing.TB) int {
	t.Helper()
	select {
	case code := <-dev.closed:
		return code
	case <-time.After(10 * time.Second):
		t.Fatalf("device %d: connection did not end", dev.id)
	}
	return 0
}

// waitFor polls cond until it holds, for at most 10 s.
func waitFor(t testing.TB, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
