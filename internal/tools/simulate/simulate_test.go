package simulate_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/tools/simulate"
)

// On a fresh node, -create makes the provider, channel and tariff the
// devices need; the devices log in, connect, get a command, ack it and
// report viewing, with no error. The devices read with the default reader
// (epoll on Linux); TestSimulateWithTheGoroutineReader, with the other.
func TestSimulateOnAFreshNode(t *testing.T) { simulateOnAFreshNode(t, "") }

func TestSimulateWithTheGoroutineReader(t *testing.T) {
	simulateOnAFreshNode(t, simulate.ReaderGoroutine)
}

func simulateOnAFreshNode(t *testing.T, reader string) {
	env := nodetest.Start(t)
	sim, err := simulate.New(simulate.Options{URL: env.URL, Devices: 5, AdminUser: env.SuperLogin, AdminPassword: env.SuperPassword,
		CreateCatalog: true, ViewEvery: 100 * time.Millisecond, StopAfterCommands: 1, ConnectRate: 100, Reader: reader})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan struct{})
	var res simulate.Result
	var runErr error
	go func() {
		defer close(done)
		res, runErr = sim.Run(ctx)
	}()
	// Once all are connected and have reported viewing, send them a command.
	for sim.Snapshot().Connected < 5 || sim.Snapshot().Viewing < 5 {
		if ctx.Err() != nil {
			t.Fatalf("devices did not connect and report: %s", sim.Snapshot().Line())
		}
		time.Sleep(20 * time.Millisecond)
	}
	status, body := env.Super(t, http.MethodPost, "/api/provider/commands/send/providers?broadcast=false", map[string]any{
		"ids": []int64{1}, "commands": []map[string]any{{"command": "user_message", "type": "notify", "text": "hello"}},
	})
	if status != http.StatusOK {
		t.Fatalf("send: %d %s", status, body)
	}
	<-done
	if runErr != nil || res.Errors != 0 || res.Received != 5 || res.Acks != 5 || res.Provider != 1 || res.Tariff != 1 {
		t.Fatalf("result %+v, %v", res, runErr)
	}
	// Running it again finds what the first run made.
	again, err := simulate.New(simulate.Options{URL: env.URL, Devices: 1, AdminUser: env.SuperLogin, AdminPassword: env.SuperPassword,
		CreateCatalog: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := again.CreateCatalog(ctx); err != nil {
		t.Fatal(err)
	}
	status, body = env.Super(t, http.MethodGet, "/api/admin/providers", nil)
	var l struct{ Total int }
	if err := json.Unmarshal(body, &l); status != http.StatusOK || err != nil || l.Total != 1 {
		t.Fatalf("providers after a second run: %d %s", status, body)
	}
}

// Errors carry the node's answer: a tariff that does not exist, devices
// whose password is wrong.
func TestSimulateReportsServerErrors(t *testing.T) {
	env := nodetest.Start(t)
	status, body := env.Super(t, http.MethodPost, "/api/admin/providers", map[string]any{"name": "P"})
	if status != http.StatusOK {
		t.Fatalf("provider: %d %s", status, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sim, err := simulate.New(simulate.Options{URL: env.URL, Provider: 1, Devices: 2, AdminUser: env.SuperLogin, AdminPassword: env.SuperPassword, Tariff: 999})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(ctx); err == nil || !strings.Contains(err.Error(), "status 400: tarif: not found") {
		t.Fatalf("an unknown tariff: %v", err)
	}

	// No admin: the accounts do not exist, so every login is refused.
	sim, err = simulate.New(simulate.Options{URL: env.URL, Provider: 1, Devices: 2, StopAfterCommands: 1, LoginFormat: "nobody%d"})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithTimeout(ctx, 2*time.Second)
	defer stop()
	res, _ := sim.Run(runCtx)
	if res.Errors != 2 || !strings.Contains(res.LastError, "status 401") || !strings.Contains(res.LastError, "invalid provider, login or password") {
		t.Fatalf("refused logins: %+v", res)
	}
}
