package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"tvsm/domain"
	"tvsm/internal/platform/schedule"
	"tvsm/internal/testkit/chtest"
	"tvsm/projections/stats"
	"tvsm/projections/stats/clickhouse"
)

// faultKillsEnv enables the fault tests: the number of times
// TestFaultsSIGKILL kills the node (make faults sets it; CI runs make
// faults after make test). Without it they skip: they take a minute and
// more, and start processes.
const faultKillsEnv = "TVSM_FAULT_KILLS"

// faultKills returns how many kills the fault tests make, skipping the
// test when they are not enabled.
func faultKills(t *testing.T) int {
	t.Helper()
	raw := os.Getenv(faultKillsEnv)
	if raw == "" {
		t.Skipf("fault test: set %s=N (make faults) to kill the node N times under load", faultKillsEnv)
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > 1000 {
		t.Fatalf("%s=%q: want a number of kills from 1 to 1000", faultKillsEnv, raw)
	}
	return n
}

// Load of the fault tests: provider sync writers, devices holding
// websockets and reporting viewing, and a provider sending delayed
// commands to those devices.
const (
	faultWriters  = 3
	faultDevices  = 8
	faultPassword = "fault-test"
	faultPinMD5   = "81dc9bdb52d04dc20036dbd8313ed055"
	// Delayed commands: one every sendEvery, due sendAhead after it is
	// sent, so that some come due while the node is down.
	sendEvery = 1500 * time.Millisecond
	sendAhead = 3 * time.Second
)

// faultRun is a node under load whose process the test kills and restarts.
type faultRun struct {
	t      *testing.T
	dir    string
	addr   string
	serve  []string // extra flags of tvsm serve
	node   *process
	client *http.Client

	provider, tariff, channel int64
	devices                   []*faultDevice

	mu        sync.Mutex
	downtimes []downtime
	accounts  []*ackedAccount
	sends     []ackedSend
	// received counts, per device, each delivery id it was sent.
	received [faultDevices]map[string]int
	// Write figures.
	attempts, retried, conflicts, transport atomic.Int64
	inDoubt                                 time.Duration // longest time a key answered 409
	failures                                atomic.Int64
}

// downtime is from a kill to the start of the next process (restarted),
// and to that node being ready (ready).
// downtime is one kill: the signal went at from, the process was reaped at
// died (between the two it may still have run a timer), a new one started
// at restarted and answered ready at ready.
type downtime struct{ from, died, restarted, ready time.Time }

type faultDevice struct {
	account int64
	login   string
	id      atomic.Int64 // the device's id, from its login
}

// ackedAccount is an account as its acknowledged writes left it.
type ackedAccount struct {
	id           int64
	login        string
	fullname     string
	subscription int64
}

type ackedSend struct {
	id       int64
	postTime time.Time
}

func newFaultRun(t *testing.T, serve ...string) *faultRun {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // the node listens on it across restarts
	r := &faultRun{t: t, dir: t.TempDir(), addr: addr, serve: serve,
		client: &http.Client{Timeout: 10 * time.Second}}
	for i := range r.received {
		r.received[i] = map[string]int{}
	}
	r.start()
	return r
}

// start starts the node and waits until it is ready.
func (r *faultRun) start() {
	r.t.Helper()
	args := append([]string{"serve", "--http", r.addr, "--data", r.dir, "--log-format", "json",
		"--shutdown-timeout", "5s"}, r.serve...)
	r.node = startProcess(r.t, "serve", []string{"TVSM_ADMIN_LOGIN=root", "TVSM_ADMIN_PASSWORD=" + faultPassword}, args...)
	r.node.addr()
	deadline := time.Now().Add(60 * time.Second)
	for {
		status, _, _, err := r.do(context.Background(), http.MethodGet, "/readyz", nil, "", "")
		if err == nil && status == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("node not ready within 60s of its start; log:\n%s", r.node.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill kills the node (SIGKILL, by its PID), keeps it down for down, and
// starts it again.
func (r *faultRun) kill(down time.Duration) {
	r.t.Helper()
	from := time.Now()
	r.node.stop(syscall.SIGKILL)
	died := time.Now()
	time.Sleep(down)
	restarted := time.Now()
	r.start()
	r.mu.Lock()
	r.downtimes = append(r.downtimes, downtime{from, died, restarted, time.Now()})
	r.mu.Unlock()
}

// fail records a failure of the load (goroutines cannot end the test).
func (r *faultRun) fail(format string, args ...any) {
	r.failures.Add(1)
	r.t.Errorf(format, args...)
}

// do sends one request as the superadmin (or with a device token) and
// returns the answer; err is a transport failure.
func (r *faultRun) do(ctx context.Context, method, path string, body any, key, token string) (int, []byte, http.Header, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+r.addr+path, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	} else {
		req.SetBasicAuth("root", faultPassword)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header, err
}

// write sends a write until it is acknowledged (2xx), as a provider's sync
// job does: again after a transport failure (the node is down), a 5xx or a
// 409 (a retry of a keyed request while its first attempt is in doubt).
// Any other answer fails the test. It returns the acknowledged body, or
// false once ctx has ended.
func (r *faultRun) write(ctx context.Context, method, path string, body any, key string) ([]byte, bool) {
	var firstConflict time.Time
	for try := 0; ; try++ {
		if ctx.Err() != nil {
			return nil, false
		}
		r.attempts.Add(1)
		if try > 0 {
			r.retried.Add(1)
		}
		status, resp, h, err := r.do(ctx, method, path, body, key, "")
		switch {
		case err != nil:
			r.transport.Add(1)
		case status/100 == 2:
			if !firstConflict.IsZero() {
				r.mu.Lock()
				r.inDoubt = max(r.inDoubt, time.Since(firstConflict))
				r.mu.Unlock()
			}
			return resp, true
		case status == http.StatusConflict:
			r.conflicts.Add(1)
			if firstConflict.IsZero() {
				firstConflict = time.Now()
			}
			if bytes.Contains(resp, []byte("idem-")) || (key != "" && h.Get("Retry-After") == "") {
				r.fail("%s %s: 409 without Retry-After or naming a stream: %s", method, path, resp)
				return nil, false
			}
		case status >= 500:
		default:
			r.fail("%s %s (key %q): %d %s", method, path, key, status, resp)
			return nil, false
		}
		select {
		case <-ctx.Done():
			return nil, false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// create posts body and returns the new object's id.
func (r *faultRun) create(path string, body any) int64 {
	r.t.Helper()
	resp, ok := r.write(context.Background(), http.MethodPost, path, body, "")
	var obj struct{ ID int64 }
	if !ok || json.Unmarshal(resp, &obj) != nil || obj.ID <= 0 {
		r.t.Fatalf("POST %s: %s", path, resp)
	}
	return obj.ID
}

// setup creates the provider, a tariff with a channel, and the devices'
// accounts subscribed to it.
func (r *faultRun) setup() {
	r.t.Helper()
	r.provider = r.create("/api/admin/providers", map[string]any{"name": "Fault ISP"})
	category := r.create("/api/admin/categories", map[string]any{"name": "News"})
	r.channel = r.create("/api/admin/channels", map[string]any{"name": "One", "number": 1, "logo_url": "https://logo/1.png", "categories": []int64{category}})
	r.tariff = r.create("/api/admin/tariffs", map[string]any{"provider": r.provider, "name": "Basic", "channels": []int64{r.channel}})
	for i := range faultDevices {
		login := fmt.Sprintf("box-owner-%d", i)
		id := r.create("/api/provider/accounts", map[string]any{"provider": r.provider, "login": login, "fullname": login, "pin_md5": faultPinMD5})
		r.create("/api/provider/account_subscriptions", map[string]any{"account": id, "tarif": r.tariff, "start": "2020-01-01T00:00:00Z"})
		r.devices = append(r.devices, &faultDevice{account: id, login: login})
	}
}

// load runs the writers and the delayed commands until writes ends, the
// devices until devices ends; wait returns once they have all stopped.
func (r *faultRun) load(writes, devices context.Context) (wait func()) {
	var wg sync.WaitGroup
	for w := range faultWriters {
		wg.Go(func() { r.writer(writes, w) })
	}
	for i := range faultDevices {
		wg.Go(func() { r.device(devices, i) })
	}
	wg.Go(func() { r.sender(writes) })
	return wg.Wait
}

// writer is a provider sync job: accounts created with Idempotency-Keys,
// each with a keyed subscription, every other one renamed afterwards.
func (r *faultRun) writer(ctx context.Context, w int) {
	for i := 0; ctx.Err() == nil && r.failures.Load() == 0; i++ {
		login := fmt.Sprintf("sync-%d-%d", w, i)
		resp, ok := r.write(ctx, http.MethodPost, "/api/provider/accounts", map[string]any{
			"provider": r.provider, "login": login, "fullname": "Subscriber " + login, "pin_md5": faultPinMD5,
		}, "account-"+login)
		if !ok {
			return
		}
		var acc struct {
			ID       int64
			Login    string
			Fullname string
		}
		if json.Unmarshal(resp, &acc) != nil || acc.ID <= 0 || acc.Login != login {
			r.fail("create %s answered %s", login, resp)
			return
		}
		a := &ackedAccount{id: acc.ID, login: login, fullname: acc.Fullname}
		r.mu.Lock()
		r.accounts = append(r.accounts, a)
		r.mu.Unlock()
		resp, ok = r.write(ctx, http.MethodPost, "/api/provider/account_subscriptions", map[string]any{
			"account": acc.ID, "tarif": r.tariff, "start": "2024-01-01T00:00:00Z",
		}, "subscription-"+login)
		if !ok {
			return
		}
		var sub struct{ ID int64 }
		if json.Unmarshal(resp, &sub) != nil || sub.ID <= 0 {
			r.fail("subscription of %s answered %s", login, resp)
			return
		}
		r.mu.Lock()
		a.subscription = sub.ID
		r.mu.Unlock()
		if i%2 == 0 {
			name := "Renamed " + login
			if _, ok := r.write(ctx, http.MethodPut, fmt.Sprintf("/api/provider/accounts/%d", acc.ID), map[string]any{"fullname": name}, ""); !ok {
				return
			}
			r.mu.Lock()
			a.fullname = name
			r.mu.Unlock()
		}
	}
}

// sender sends a delayed notify to every device's account every sendEvery.
func (r *faultRun) sender(ctx context.Context) {
	ids := make([]int64, len(r.devices))
	for i, d := range r.devices {
		ids[i] = d.account
	}
	t := time.NewTicker(sendEvery)
	defer t.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		post := time.Now().Add(sendAhead).UTC().Truncate(time.Second)
		resp, ok := r.write(ctx, http.MethodPost, "/api/provider/commands/send/accounts?broadcast=false", map[string]any{
			"ids": ids, "commands": []map[string]any{{"command": "user_message", "type": "notify",
				"text": fmt.Sprintf("notice %d", n), "post_time": post.Format("2006-01-02T15:04:05")}},
		}, fmt.Sprintf("send-%d", n))
		if !ok {
			return
		}
		var sent struct {
			SendID int64 `json:"send_id"`
		}
		if json.Unmarshal(resp, &sent) != nil || sent.SendID <= 0 {
			r.fail("send %d answered %s", n, resp)
			return
		}
		r.mu.Lock()
		r.sends = append(r.sends, ackedSend{id: sent.SendID, postTime: post})
		r.mu.Unlock()
	}
}

// device is a set-top box: it logs in, holds a websocket (again after
// every drop), records and acknowledges every command, and reports a
// second of viewing every second while connected.
func (r *faultRun) device(ctx context.Context, i int) {
	d := r.devices[i]
	token := ""
	for ctx.Err() == nil {
		if token == "" {
			status, body, _, err := r.do(ctx, http.MethodPost, "/api/device/login", map[string]any{
				"provider": r.provider, "login": d.login, "password_md5": faultPinMD5,
				"device": map[string]any{"unique_id": fmt.Sprintf("fault-box-%d", i), "class": "stb"},
			}, "", "")
			var out struct {
				Token    string
				DeviceID int64 `json:"device_id"`
			}
			if err != nil || status != http.StatusOK || json.Unmarshal(body, &out) != nil {
				schedule.Sleep(ctx, 100*time.Millisecond)
				continue
			}
			token = out.Token
			d.id.Store(out.DeviceID)
		}
		if relogin := r.session(ctx, i, token); relogin {
			token = ""
		}
		schedule.Sleep(ctx, 100*time.Millisecond)
	}
}

// session holds one websocket until it drops; true when the token was
// refused.
func (r *faultRun) session(ctx context.Context, i int, token string) (relogin bool) {
	dialer := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	ws, resp, err := dialer.DialContext(ctx, "ws://"+r.addr+"/api/device/ws", http.Header{"Authorization": {"Bearer " + token}})
	if err != nil {
		return resp != nil && resp.StatusCode == http.StatusUnauthorized
	}
	defer ws.Close()
	stop := context.AfterFunc(ctx, func() { ws.Close() })
	defer stop()
	viewing, cancel := context.WithCancel(ctx)
	defer cancel()
	go r.view(viewing, token)
	for {
		var m struct{ Type, ID string }
		if err := ws.ReadJSON(&m); err != nil {
			return false
		}
		if m.Type != "command" {
			continue
		}
		r.mu.Lock()
		r.received[i][m.ID]++
		r.mu.Unlock()
		_ = ws.WriteJSON(map[string]string{"type": "ack", "id": m.ID})
	}
}

// view reports a second of live viewing every second until ctx ends.
func (r *faultRun) view(ctx context.Context, token string) {
	for schedule.Sleep(ctx, time.Second) {
		start := time.Now().Add(-time.Second).UTC().Format("2006-01-02T15:04:05-0700")
		_, _, _, _ = r.do(ctx, http.MethodPost, "/api/device/viewing", map[string]any{
			"sessions": []map[string]any{{"channel_id": r.channel, "mode": "live", "start": start, "seconds": 1}},
		}, "", token)
	}
}

// get reads path as the superadmin into out.
func (r *faultRun) get(path string, out any) {
	r.t.Helper()
	status, body, _, err := r.do(context.Background(), http.MethodGet, path, nil, "", "")
	if err != nil || status != http.StatusOK {
		r.t.Fatalf("GET %s: %d %s %v", path, status, body, err)
	}
	if err := json.Unmarshal(body, out); err != nil {
		r.t.Fatalf("GET %s: %v in %s", path, err, body)
	}
}

// checkWrites checks every acknowledged write through the API: each
// account once, with its acknowledged name, and its one subscription.
func (r *faultRun) checkWrites() (found int) {
	r.t.Helper()
	for _, a := range r.accounts {
		var got struct {
			ID       int64
			Login    string
			Fullname string
		}
		r.get(fmt.Sprintf("/api/provider/accounts/%d", a.id), &got)
		if got.Login != a.login || got.Fullname != a.fullname {
			r.t.Errorf("account %d: %s %q, want %s %q", a.id, got.Login, got.Fullname, a.login, a.fullname)
		}
		var byLogin struct{ Total int }
		r.get(fmt.Sprintf("/api/provider/accounts?login=%s&provider=%d", a.login, r.provider), &byLogin)
		if byLogin.Total != 1 {
			r.t.Errorf("login %s: %d accounts, want 1", a.login, byLogin.Total)
		}
		found++
		if a.subscription == 0 {
			continue // the load stopped before its subscription was acknowledged
		}
		var subs struct {
			Data  []struct{ ID int64 }
			Total int
		}
		r.get(fmt.Sprintf("/api/provider/account_subscriptions?account=%d", a.id), &subs)
		if subs.Total != 1 || len(subs.Data) != 1 || subs.Data[0].ID != a.subscription {
			r.t.Errorf("account %d: subscriptions %+v, want only %d", a.id, subs, a.subscription)
		}
		found++
	}
	return found
}

// sendFigures are what became of the delayed commands.
type sendFigures struct {
	sends, inDowntime, late, deliveries, devicesReached int
}

// checkSends checks the delayed commands: each device got each command at
// most once, every delivery a device got is in the receipts, every
// command due while the node was down was delivered late, and the others
// reached the devices connected at their time.
func (r *faultRun) checkSends() sendFigures {
	r.t.Helper()
	var f sendFigures
	for i, got := range r.received {
		for id, n := range got {
			if n != 1 {
				r.t.Errorf("device %d got delivery %s %d times", i, id, n)
			}
		}
	}
	for _, s := range r.sends {
		var v struct {
			Issued   string
			Commands []struct {
				State    string
				Reason   *string
				Counts   struct{ Sent int }
				Receipts []struct{ Device int64 }
			}
		}
		r.get(fmt.Sprintf("/api/provider/commands/%d", s.id), &v)
		if len(v.Commands) != 1 {
			r.t.Fatalf("send %d: %+v", s.id, v)
		}
		c := v.Commands[0]
		f.sends++
		f.deliveries += c.Counts.Sent
		if c.Counts.Sent > 0 {
			f.devicesReached++
		}
		late := c.State == "sending" || c.State == "expired"
		switch {
		case c.State == "expired" && (c.Reason == nil || *c.Reason != "missed_send_time"):
			r.t.Errorf("send %d (due %v): expired for %v", s.id, s.postTime, c.Reason)
		case c.State != "done" && !late:
			r.t.Errorf("send %d (due %v): state %s", s.id, s.postTime, c.State)
		}
		if late {
			f.late++
		}
		// A send acknowledged only after its post_time (its retries
		// waited for the node) was sent when it was issued.
		issued, err := time.Parse("2006-01-02T15:04:05-0700", v.Issued)
		if err != nil {
			r.t.Fatalf("send %d: issued %q: %v", s.id, v.Issued, err)
		}
		due := s.postTime
		if issued.After(due) {
			due = issued.Add(time.Second) // issued is to the second
		}
		switch r.dueWhen(due) {
		case dueWhileDown:
			// No process ran at its time: the late delivery must have
			// reached the devices that reconnected.
			f.inDowntime++
			if !late || c.Counts.Sent == 0 {
				r.t.Errorf("send %d due at %v while no node ran: %s, delivered to %d devices; want delivered late", s.id, s.postTime, c.State, c.Counts.Sent)
			}
		case dueWhileUp:
			if c.Counts.Sent == 0 {
				r.t.Errorf("send %d due at %v while the node ran: %s, delivered to no device", s.id, s.postTime, c.State)
			}
		}
		// Every device that got it is among its receipts.
		for i, d := range r.devices {
			dev := d.id.Load()
			if r.received[i][domain.DeliveryID(s.id, 0, dev)] > 0 && !slices.ContainsFunc(c.Receipts, func(x struct{ Device int64 }) bool { return x.Device == dev }) {
				r.t.Errorf("device %d got send %d, which its receipts do not list", dev, s.id)
			}
		}
	}
	return f
}

// When a delayed command came due.
const (
	dueWhileUp   = iota
	dueWhileDown // no node process ran
	dueStarting  // a node was dying or starting, or its devices reconnecting (within a second of ready)
)

// dueWhen classifies t by the downtimes.
func (r *faultRun) dueWhen(t time.Time) int {
	for _, d := range r.downtimes {
		switch {
		case !t.Before(d.from) && t.Before(d.died):
			// The killed process may have run this timer before the
			// signal reached it (the test's goroutine can be descheduled
			// between reading the clock and signalling).
			return dueStarting
		case !t.Before(d.died) && t.Before(d.restarted):
			return dueWhileDown
		case !t.Before(d.restarted) && t.Before(d.ready.Add(time.Second)):
			return dueStarting
		}
	}
	return dueWhileUp
}

// TestFaultsSIGKILL kills the node (SIGKILL) TVSM_FAULT_KILLS times while
// provider sync jobs write with Idempotency-Keys, devices hold websockets
// and report viewing, and delayed commands come due, and restarts it each
// time. Afterwards: every acknowledged write is there once with its
// acknowledged values; each device got each command at most once; the
// commands due while the node was down were delivered late; the read
// model and the statistics equal a rebuild from the log.
//
//	TVSM_FAULT_KILLS=3 go test -run TestFaultsSIGKILL -v -count=1 ./cmd/tvsm/
func TestFaultsSIGKILL(t *testing.T) {
	kills := faultKills(t)
	began := time.Now()
	r := newFaultRun(t)
	r.setup()
	writes, stopWrites := context.WithCancel(context.Background())
	devices, stopDevices := context.WithCancel(context.Background())
	wait := r.load(writes, devices)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 22))
	var longest time.Duration
	for k := range kills {
		time.Sleep(2*time.Second + rand.N(2*time.Second))
		if r.failures.Load() > 0 {
			break
		}
		down := 300*time.Millisecond + time.Duration(rng.Int64N(int64(3700*time.Millisecond)))
		r.kill(down)
		d := r.downtimes[len(r.downtimes)-1]
		longest = max(longest, d.ready.Sub(d.from))
		t.Logf("kill %d/%d: reaped %v after the signal, down %v, ready %v after its start", k+1, kills, d.died.Sub(d.from).Round(time.Millisecond), d.restarted.Sub(d.from).Round(time.Millisecond),
			d.ready.Sub(d.restarted).Round(time.Millisecond))
	}
	time.Sleep(2 * time.Second)
	stopWrites()
	// The devices stay until every delayed command sent is due.
	time.Sleep(sendAhead + 2*time.Second)
	stopDevices()
	wait()
	if r.failures.Load() > 0 {
		t.FailNow()
	}

	found := r.checkWrites()
	sends := r.checkSends()
	if code := r.node.stop(syscall.SIGTERM); code != exitOK {
		t.Fatalf("serve exited %d on SIGTERM; log:\n%s", code, r.node.log)
	}
	s := openNodeState(t, r.dir)
	s.readModelMatchesRebuild(t, r.dir)
	today := stats.DayOf(time.Now(), time.UTC)
	s.statsMatchRebuild(t, r.dir, openEmbeddedFacts(t, r.dir), "embedded", stats.Range{From: today - 2, To: today + 1})

	acked := 0
	for _, a := range r.accounts {
		acked++
		if a.subscription != 0 {
			acked++
		}
	}
	t.Logf("%d kills survived in %v (longest from kill to ready %v); writes: %d acknowledged, %d found, %d attempts, %d retried "+
		"(%d after transport errors, %d × 409); longest 409 of a key after a crash %v",
		len(r.downtimes), time.Since(began).Round(time.Second), longest.Round(time.Millisecond), acked, found,
		r.attempts.Load(), r.retried.Load(), r.transport.Load(), r.conflicts.Load(), r.inDoubt.Round(time.Millisecond))
	t.Logf("delayed commands: %d sent, %d due while no node ran (all delivered late), %d delivered late in all, "+
		"%d reached a device, %d deliveries, none twice", sends.sends, sends.inDowntime, sends.late, sends.devicesReached, sends.deliveries)
	if sends.inDowntime == 0 && kills >= 3 {
		t.Errorf("no delayed command came due while no node ran: the test proved nothing about them")
	}
	if len(r.accounts) == 0 || sends.devicesReached == 0 {
		t.Error("no write was acknowledged, or no command delivered: the test proved nothing")
	}
}

// TestFaultsClickHouseKilled kills ClickHouse (SIGKILL) under the same load
// while the node keeps running on it, and restarts it, a few times:
// Provider API writes keep succeeding throughout (ClickHouse is not on
// their path), the statistics catch up once it is back, and they equal a
// rebuild from the log: nothing lost, nothing counted twice.
//
//	TVSM_FAULT_KILLS=3 go test -run TestFaultsClickHouseKilled -v -count=1 ./cmd/tvsm/
func TestFaultsClickHouseKilled(t *testing.T) {
	kills := min(faultKills(t), 3)
	began := time.Now()
	ch := chtest.StartOwn(t)
	url := ch.URL("tvsm_faults")
	r := newFaultRun(t, "--stats", url)
	r.setup()
	writes, stopWrites := context.WithCancel(context.Background())
	devices, stopDevices := context.WithCancel(context.Background())
	wait := r.load(writes, devices)
	var duringOutages int64
	for k := range kills {
		time.Sleep(2 * time.Second)
		before := r.attempts.Load()
		ch.Kill()
		time.Sleep(3 * time.Second)
		duringOutages += r.attempts.Load() - before
		model, facts := r.positions()
		if err := ch.Restart(); err != nil {
			t.Fatalf("restart ClickHouse: %v", err)
		}
		restarted := time.Now()
		took := r.statsReach(model)
		t.Logf("ClickHouse kill %d/%d: down 3s, %d writes meanwhile, all acknowledged; statistics %v events behind the read model "+
			"when it came back, %v later caught up to where the read model was", k+1, kills, r.attempts.Load()-before, model-facts,
			took.Sub(restarted).Round(time.Millisecond))
	}
	time.Sleep(2 * time.Second)
	stopWrites()
	time.Sleep(sendAhead + time.Second)
	stopDevices()
	wait()
	if r.failures.Load() > 0 {
		t.FailNow()
	}
	if n := r.retried.Load(); n != 0 || duringOutages == 0 {
		t.Fatalf("%d writes were retried (%d after transport errors, %d × 409), %d made while ClickHouse was down; want every one acknowledged at once",
			n, r.transport.Load(), r.conflicts.Load(), duringOutages)
	}
	model, _ := r.positions()
	stopped := time.Now()
	caughtUp := r.statsReach(model).Sub(stopped)
	found := r.checkWrites()
	if code := r.node.stop(syscall.SIGTERM); code != exitOK {
		t.Fatalf("serve exited %d on SIGTERM; log:\n%s", code, r.node.log)
	}
	facts, err := clickhouse.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer facts.Close()
	s := openNodeState(t, r.dir)
	today := stats.DayOf(time.Now(), time.UTC)
	s.statsMatchRebuild(t, r.dir, facts, "clickhouse", stats.Range{From: today - 2, To: today + 1})
	s.readModelMatchesRebuild(t, r.dir)
	t.Logf("%d ClickHouse kills in %v: %d writes, all acknowledged at once (%d while ClickHouse was down), %d found; "+
		"statistics at the read model's position %v after the load stopped", kills, time.Since(began).Round(time.Second), r.attempts.Load(), duringOutages,
		found, caughtUp.Round(time.Millisecond))
}

// positions returns the commit positions the node's read model and
// statistics have applied (tvsm_projection_position).
func (r *faultRun) positions() (model, facts float64) {
	r.t.Helper()
	status, body, _, err := r.do(context.Background(), http.MethodGet, "/metrics", nil, "", "")
	if err != nil || status != http.StatusOK {
		r.t.Fatalf("/metrics: %d %v", status, err)
	}
	model, ok1 := metricValue(string(body), `tvsm_projection_position{projection="readmodel"}`)
	facts, ok2 := metricValue(string(body), `tvsm_projection_position{projection="statistics"}`)
	if !ok1 || !ok2 {
		r.t.Fatalf("/metrics lacks the projection positions:\n%s", body)
	}
	return model, facts
}

// statsReach waits until the node's statistics have applied the log up to
// position pos and returns when they had.
func (r *faultRun) statsReach(pos float64) time.Time {
	r.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, facts := r.positions(); facts >= pos {
			return time.Now()
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("statistics did not reach position %v within 2 minutes; log:\n%s", pos, r.node.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
