package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"tvsm/httpapi"
)

// The cluster's superadmin and the PIN (MD5 of "1234") of its accounts.
const (
	clusterAdmin    = "root"
	clusterPassword = "multi-node-test"
	clusterPIN      = "81dc9bdb52d04dc20036dbd8313ed055"
)

// TestMultiNodeOnESDBDouble runs a cluster as operators would, each part a
// process of its own: the protocol double as the event store and three
// `tvsm serve` nodes on it. It checks, in order: read-your-writes across
// nodes with the position headers; a command sent through one node reaching
// the devices connected to the others exactly once; concurrent updates of
// one account through all three losing nothing; 50 concurrent creates of
// one login giving one account; a node killed (SIGKILL) under load and
// restarted losing no acknowledged write; the store killed under load and
// restarted: nodes say not ready and keep answering reads meanwhile, answer
// writes 503, never 500, then resume and lose nothing. Ids are unique
// throughout.
func TestMultiNodeOnESDBDouble(t *testing.T) {
	if testing.Short() {
		t.Skip("starts five processes")
	}
	c := startCluster(t, "A", "B", "C")
	a, b, cc := c.nodes[0], c.nodes[1], c.nodes[2]
	ids := newIDBook()

	provider := a.create(t, "/api/admin/providers", map[string]any{"name": "Cluster ISP"}, "")
	tariff := a.create(t, "/api/admin/tariffs", map[string]any{"provider": provider.id, "name": "Basic", "enabled": true}, "")

	t.Run("read your writes across nodes", func(t *testing.T) {
		acc := a.create(t, "/api/provider/accounts", account(provider.id, "ryw"), "")
		ids.add(t, acc.id)
		for _, n := range []*clusterNode{b, cc} {
			status, _, body := n.do(http.MethodGet, "/api/provider/accounts/"+itoa(acc.id), nil, acc.position)
			if status != http.StatusOK || !strings.Contains(string(body), `"login":"ryw"`) {
				t.Fatalf("node %s with %s %s: %d %s", n.name, httpapi.HeaderMinPosition, acc.position, status, body)
			}
		}
	})

	t.Run("a command through one node reaches the devices of the others once", func(t *testing.T) {
		var accounts []int64
		var devices []*testDevice
		for i, n := range []*clusterNode{b, b, cc, cc} {
			login := fmt.Sprintf("viewer%d", i)
			acc := a.create(t, "/api/provider/accounts", account(provider.id, login), "")
			ids.add(t, acc.id)
			accounts = append(accounts, acc.id)
			devices = append(devices, connectDevice(t, n, provider.id, login, fmt.Sprintf("box-%d", i), acc.position))
		}
		b.waitConnections(t, 2)
		cc.waitConnections(t, 2)
		a.create(t, "/api/provider/commands/send/accounts?broadcast=false", map[string]any{
			"ids": accounts, "commands": []map[string]any{{"command": "user_message", "type": "notify", "text": "hello cluster"}},
		}, "")
		for i, d := range devices {
			if got := d.commands(10*time.Second, 1); len(got) != 1 {
				t.Fatalf("device %d got %d commands, want 1", i, len(got))
			}
		}
		time.Sleep(time.Second) // a second delivery would come within this
		for i, d := range devices {
			if got := d.commands(0, 2); len(got) != 1 {
				t.Fatalf("device %d got %d commands (%v), want exactly 1", i, len(got), got)
			}
		}
	})

	t.Run("concurrent updates of one account through every node lose nothing", func(t *testing.T) {
		acc := a.create(t, "/api/provider/accounts", account(provider.id, "shared"), "")
		ids.add(t, acc.id)
		const perNode = 5
		var conflicts atomic.Int64
		var mu sync.Mutex
		latest := acc.position
		var wg sync.WaitGroup
		errs := make(chan error, perNode*len(c.nodes))
		for _, n := range c.nodes {
			for i := range perNode {
				wg.Go(func() {
					// A 409 says the write gave up against the others and
					// changed nothing; a client sends it again, as here.
					for try := 1; ; try++ {
						status, h, body := n.do(http.MethodPost, "/api/provider/account_subscriptions", map[string]any{
							"account": acc.id, "tarif": tariff.id, "start": fmt.Sprintf("2026-01-%02dT00:00:00+0000", 1+i),
						}, acc.position)
						if status == http.StatusConflict && try < 10 {
							conflicts.Add(1)
							continue
						}
						if status != http.StatusOK {
							errs <- fmt.Errorf("node %s: subscription %d, try %d: %d %s", n.name, i, try, status, body)
							return
						}
						mu.Lock()
						latest = laterPosition(t, latest, h.Get(httpapi.HeaderPosition))
						mu.Unlock()
						return
					}
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		for _, n := range c.nodes {
			var list struct{ Total int }
			n.get(t, "/api/provider/account_subscriptions?account="+itoa(acc.id)+"&limit=0", latest, &list)
			if list.Total != perNode*len(c.nodes) {
				t.Errorf("node %s lists %d subscriptions of the account, want %d", n.name, list.Total, perNode*len(c.nodes))
			}
		}
		t.Logf("%d updates through %d nodes; %d answered 409 and were sent again", perNode*len(c.nodes), len(c.nodes), conflicts.Load())
	})

	t.Run("50 concurrent creates of one login give one account", func(t *testing.T) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		statuses := map[int]int{}
		latest := ""
		for i := range 50 {
			n := c.nodes[i%len(c.nodes)]
			wg.Go(func() {
				status, h, body := n.do(http.MethodPost, "/api/provider/accounts", account(provider.id, "popular"), "")
				mu.Lock()
				defer mu.Unlock()
				statuses[status]++
				if status == http.StatusOK {
					latest = h.Get(httpapi.HeaderPosition)
					ids.addErr(decodeCreated(body))
				}
			})
		}
		wg.Wait()
		if statuses[http.StatusOK] != 1 || statuses[http.StatusOK]+statuses[http.StatusBadRequest] != 50 {
			t.Fatalf("statuses %v, want one 200 and 49 400 (login taken)", statuses)
		}
		for _, n := range c.nodes {
			var list struct{ Total int }
			n.get(t, "/api/provider/accounts?login=popular", latest, &list)
			if list.Total != 1 {
				t.Errorf("node %s: %d accounts with the login, want 1", n.name, list.Total)
			}
		}
	})

	t.Run("a node killed under load and restarted loses no acknowledged write", func(t *testing.T) {
		load := startLoad(c.nodes, provider.id, "k")
		load.waitAcked(t, 60)
		b.kill(t)
		load.waitAcked(t, load.acked()+30) // the others go on
		b.restart(t)
		load.waitAckedBy(t, b, 10)
		load.stop(t)
		load.check(t, c.nodes, ids)
	})

	t.Run("the store killed under load and restarted: not ready, reads answered, nothing lost", func(t *testing.T) {
		load := startLoad(c.nodes, provider.id, "s")
		load.waitAcked(t, 60)
		c.double.stop(syscall.SIGKILL)
		for _, n := range c.nodes {
			n.waitReady(t, false)
			var list struct{ Total int }
			n.get(t, "/api/provider/accounts?login=ryw", "", &list)
			if list.Total != 1 {
				t.Errorf("node %s answered the read without its store with %d accounts, want 1", n.name, list.Total)
			}
		}
		during := load.acked()
		c.startDouble(t)
		for _, n := range c.nodes {
			n.waitReady(t, true)
		}
		load.waitAcked(t, during+60)
		load.stop(t)
		if load.statuses()[http.StatusServiceUnavailable] == 0 {
			t.Errorf("no write was answered 503 while the store was down: %v", load.statuses())
		}
		load.check(t, c.nodes, ids)
	})
}

// cluster is the double and the nodes on it.
type cluster struct {
	t         *testing.T
	dir       string
	double    *process
	storeAddr string
	nodes     []*clusterNode
}

func startCluster(t *testing.T, names ...string) *cluster {
	c := &cluster{t: t, dir: t.TempDir(), storeAddr: "127.0.0.1:0"}
	c.startDouble(t)
	for _, name := range names {
		n := &clusterNode{name: name, cluster: c, data: filepath.Join(c.dir, "node-"+name), addr: "127.0.0.1:0",
			client: &http.Client{Timeout: 15 * time.Second}}
		c.nodes = append(c.nodes, n)
	}
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		wg.Go(n.start) // together: the first start bootstraps the admin once
	}
	wg.Wait()
	for _, n := range c.nodes {
		n.addr = n.proc.addr()
		n.base = "http://" + n.addr
		n.waitReady(t, true)
	}
	return c
}

// startDouble starts the double on the cluster's data and address.
func (c *cluster) startDouble(t *testing.T) {
	c.double = startProcess(t, "esdb-double", nil, "esdb-double", "--data", filepath.Join(c.dir, "esdb"), "--listen", c.storeAddr, "--log-format", "json")
	c.storeAddr = c.double.addr()
}

// clusterNode is one `tvsm serve` of the cluster, on a data directory and
// address it keeps across restarts.
type clusterNode struct {
	name, data, addr, base string
	cluster                *cluster
	proc                   *process
	client                 *http.Client
}

func (n *clusterNode) start() {
	n.proc = startProcess(n.cluster.t, "serve "+n.name, []string{"TVSM_ADMIN_LOGIN=" + clusterAdmin, "TVSM_ADMIN_PASSWORD=" + clusterPassword, testMasterKeyEnv},
		"serve", "--http", n.addr, "--data", n.data, "--log-format", "json", "--node-name", n.name,
		"--eventstore", "esdb://"+n.cluster.storeAddr+"?tls=false", "--stats-embedded-on-shared-store", "true",
		"--read-your-writes-timeout", "10s")
}

// kill ends the node with SIGKILL.
func (n *clusterNode) kill(t *testing.T) {
	t.Helper()
	n.proc.stop(syscall.SIGKILL)
}

// restart starts the node again on its data and address and waits until it
// is ready.
func (n *clusterNode) restart(t *testing.T) {
	t.Helper()
	n.start()
	n.proc.addr()
	n.waitReady(t, true)
}

// waitReady waits until /readyz answers 200 (ready) or 503 (not), for up
// to 30 s.
func (n *clusterNode) waitReady(t *testing.T, ready bool) {
	t.Helper()
	want := http.StatusServiceUnavailable
	if ready {
		want = http.StatusOK
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, _, body := n.do(http.MethodGet, "/readyz", nil, "")
		if status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s: /readyz %d %s, want %d; log:\n%s", n.name, status, body, want, n.proc.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitConnections waits (up to 10 s) until the node's gateway holds n
// device connections (its tvsm_ws_connections gauge).
func (n *clusterNode) waitConnections(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	line := "\ntvsm_ws_connections " + strconv.Itoa(want) + "\n"
	for {
		status, _, body := n.do(http.MethodGet, "/metrics", nil, "")
		if status == http.StatusOK && strings.Contains(string(body), line) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s does not hold %d device connections: %d", n.name, want, status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// do sends a request as the superadmin, with minPosition (when set) as
// X-TVSM-Min-Position. A transport error is status 0 with the error as
// the body.
func (n *clusterNode) do(method, path string, body any, minPosition string) (int, http.Header, []byte) {
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, nil, []byte(err.Error())
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, n.base+path, r)
	if err != nil {
		return 0, nil, []byte(err.Error())
	}
	req.SetBasicAuth(clusterAdmin, clusterPassword)
	req.Header.Set("Content-Type", "application/json")
	if minPosition != "" {
		req.Header.Set(httpapi.HeaderMinPosition, minPosition)
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return 0, nil, []byte(err.Error())
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, []byte(err.Error())
	}
	return resp.StatusCode, resp.Header, data
}

// created is what a create answered: the new id and the write's position.
type created struct {
	id       int64
	position string
}

// create POSTs body and fails the test unless the answer is 200 with an
// id (or send_id) and a position.
func (n *clusterNode) create(t *testing.T, path string, body any, minPosition string) created {
	t.Helper()
	status, h, data := n.do(http.MethodPost, path, body, minPosition)
	if status != http.StatusOK {
		t.Fatalf("node %s: POST %s: %d %s", n.name, path, status, data)
	}
	id, err := decodeCreated(data)
	pos := h.Get(httpapi.HeaderPosition)
	if err != nil || pos == "" {
		t.Fatalf("node %s: POST %s answered %s with %s %q", n.name, path, data, httpapi.HeaderPosition, pos)
	}
	return created{id: id, position: pos}
}

// get GETs path and decodes the 200 answer into out.
func (n *clusterNode) get(t *testing.T, path, minPosition string, out any) {
	t.Helper()
	status, _, data := n.do(http.MethodGet, path, nil, minPosition)
	if status != http.StatusOK {
		t.Fatalf("node %s: GET %s: %d %s", n.name, path, status, data)
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatalf("node %s: GET %s: %v in %s", n.name, path, err, data)
	}
}

func decodeCreated(body []byte) (int64, error) {
	var v struct {
		ID     int64 `json:"id"`
		SendID int64 `json:"send_id"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return 0, err
	}
	if v.ID == 0 && v.SendID == 0 {
		return 0, fmt.Errorf("no id in %s", body)
	}
	return max(v.ID, v.SendID), nil
}

func account(provider int64, login string) map[string]any {
	return map[string]any{"provider": provider, "login": login, "fullname": "User " + login, "pin_md5": clusterPIN}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// laterPosition returns the later of two X-TVSM-Position values.
func laterPosition(t *testing.T, a, b string) string {
	pa, errA := httpapi.ParsePosition(a)
	pb, errB := httpapi.ParsePosition(b)
	if errA != nil || errB != nil {
		t.Errorf("positions %q, %q: %v %v", a, b, errA, errB)
		return a
	}
	if pb.After(pa) {
		return b
	}
	return a
}

// idBook holds every id seen, to check that no id is handed out twice.
type idBook struct {
	mu   sync.Mutex
	seen map[int64]bool
	errs []error
}

func newIDBook() *idBook { return &idBook{seen: map[int64]bool{}} }

func (b *idBook) add(t *testing.T, id int64) {
	t.Helper()
	if err := b.addErr(id, nil); err != nil {
		t.Fatal(err)
	}
}

func (b *idBook) addErr(id int64, err error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil && b.seen[id] {
		err = fmt.Errorf("id %d handed out twice", id)
	}
	if err != nil {
		b.errs = append(b.errs, err)
		return err
	}
	b.seen[id] = true
	return nil
}

// testDevice is a set-top box logged in through one node and holding its
// websocket there.
type testDevice struct {
	mu  sync.Mutex
	ids []string // delivery ids of the commands received
	got chan struct{}
}

// connectDevice logs a device of the account with login in through node n
// (once n has applied minPosition) and opens its websocket there.
func connectDevice(t *testing.T, n *clusterNode, provider int64, login, uniqueID, minPosition string) *testDevice {
	t.Helper()
	status, _, body := n.do(http.MethodPost, "/api/device/login", map[string]any{
		"provider": provider, "login": login, "password_md5": clusterPIN,
		"device": map[string]string{"unique_id": uniqueID, "class": "stb", "model": "multi-node-test"},
	}, minPosition)
	var token struct{ Token string }
	if status != http.StatusOK || json.Unmarshal(body, &token) != nil || token.Token == "" {
		t.Fatalf("node %s: device login %s: %d %s", n.name, login, status, body)
	}
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(n.base, "http")+"/api/device/ws",
		http.Header{"Authorization": {"Bearer " + token.Token}})
	if err != nil {
		t.Fatalf("node %s: websocket of %s: %v", n.name, login, err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	d := &testDevice{got: make(chan struct{}, 16)}
	go func() {
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			var m struct{ Type, ID string }
			if json.Unmarshal(data, &m) != nil || m.Type != "command" {
				continue
			}
			d.mu.Lock()
			d.ids = append(d.ids, m.ID)
			d.mu.Unlock()
			d.got <- struct{}{}
			ack, _ := json.Marshal(map[string]string{"type": "ack", "id": m.ID})
			_ = ws.WriteMessage(websocket.TextMessage, ack)
		}
	}()
	return d
}

// commands waits up to wait for n commands and returns those received.
func (d *testDevice) commands(wait time.Duration, n int) []string {
	deadline := time.After(wait)
	for {
		d.mu.Lock()
		ids := slices.Clone(d.ids)
		d.mu.Unlock()
		if len(ids) >= n {
			return ids
		}
		select {
		case <-d.got:
		case <-deadline:
			return ids
		}
	}
}

// load creates accounts through every node from two workers each until
// stopped, and books what was acknowledged.
type load struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	ack    map[string]int64 // login → id of every 200
	byNode map[string]int   // acknowledgements per node
	status map[int]int      // answers by status (0: transport error)
	pos    string           // the latest position acknowledged
	fail   []string         // unexpected answers
}

func startLoad(nodes []*clusterNode, provider int64, prefix string) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{cancel: cancel, ack: map[string]int64{}, byNode: map[string]int{}, status: map[int]int{}, pos: "0"}
	for _, n := range nodes {
		for w := range 2 {
			l.wg.Go(func() {
				for i := 0; ctx.Err() == nil; i++ {
					login := fmt.Sprintf("%s-%s%d-%d", prefix, n.name, w, i)
					status, h, body := n.do(http.MethodPost, "/api/provider/accounts", account(provider, login), "")
					l.book(n, login, status, h, body)
					if status != http.StatusOK {
						time.Sleep(20 * time.Millisecond) // a node or store down
					}
				}
			})
		}
	}
	return l
}

func (l *load) book(n *clusterNode, login string, status int, h http.Header, body []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.status[status]++
	switch status {
	case http.StatusOK:
		id, err := decodeCreated(body)
		if err != nil {
			l.fail = append(l.fail, fmt.Sprintf("node %s: create %s: %v", n.name, login, err))
			return
		}
		l.ack[login] = id
		l.byNode[n.name]++
		if p := h.Get(httpapi.HeaderPosition); p != "" {
			pa, _ := httpapi.ParsePosition(l.pos)
			if pb, err := httpapi.ParsePosition(p); err == nil && pb.After(pa) {
				l.pos = p
			}
		}
	case 0, http.StatusServiceUnavailable:
		// The node or its store is down: the write's outcome is unknown.
	default:
		l.fail = append(l.fail, fmt.Sprintf("node %s: create %s: %d %s", n.name, login, status, body))
	}
}

func (l *load) acked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ack)
}

func (l *load) statuses() map[int]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.status)
}

// waitAcked waits (up to a minute) until n creates were acknowledged.
func (l *load) waitAcked(t *testing.T, n int) {
	t.Helper()
	l.waitFor(t, fmt.Sprintf("%d acknowledged creates", n), func() bool { return len(l.ack) >= n })
}

// waitAckedBy waits until node has acknowledged n more creates than now.
func (l *load) waitAckedBy(t *testing.T, node *clusterNode, n int) {
	t.Helper()
	l.mu.Lock()
	want := l.byNode[node.name] + n
	l.mu.Unlock()
	l.waitFor(t, fmt.Sprintf("%d creates acknowledged by node %s", want, node.name), func() bool { return l.byNode[node.name] >= want })
}

func (l *load) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		l.mu.Lock()
		ok, status := cond(), maps.Clone(l.status)
		l.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within a minute; answers so far %v", what, status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (l *load) stop(t *testing.T) {
	t.Helper()
	l.cancel()
	l.wg.Wait()
}

// check fails the test on an unexpected answer, and unless every node lists
// every acknowledged account under its login and id, with ids unique.
func (l *load) check(t *testing.T, nodes []*clusterNode, ids *idBook) {
	t.Helper()
	for _, f := range l.fail {
		t.Error(f)
	}
	for _, id := range l.ack {
		if err := ids.addErr(id, nil); err != nil {
			t.Error(err)
		}
	}
	for _, n := range nodes {
		var list struct {
			Data []struct {
				ID    int64
				Login string
			}
		}
		n.get(t, "/api/provider/accounts?limit=0", l.pos, &list)
		have := make(map[string]int64, len(list.Data))
		for _, a := range list.Data {
			have[a.Login] = a.ID
		}
		lost := 0
		for login, id := range l.ack {
			if have[login] != id {
				lost++
				if lost <= 5 {
					t.Errorf("node %s: acknowledged account %s (id %d) is missing (found id %d)", n.name, login, id, have[login])
				}
			}
		}
		if lost > 0 {
			t.Errorf("node %s lost %d of %d acknowledged creates", n.name, lost, len(l.ack))
		}
	}
	t.Logf("%d creates acknowledged; answers %v; per node %v", len(l.ack), l.status, l.byNode)
}
