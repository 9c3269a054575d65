package node_test

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/internal/testkit/nodetest"
)

// deviceLogin sets up a provider, a channel, a tariff and a subscribed
// account on env, logs device "roaming" in and returns its id and token.
func deviceLogin(t *testing.T, env *nodetest.Env) (device int64, bearer http.Header) {
	t.Helper()
	provider := decodeID(t, superOK(t, env, http.MethodPost, "/api/admin/providers", map[string]any{"name": "Two nodes"}))
	channel := decodeID(t, superOK(t, env, http.MethodPost, "/api/admin/channels", map[string]any{"name": "One", "number": 1}))
	tariff := decodeID(t, superOK(t, env, http.MethodPost, "/api/admin/tariffs", map[string]any{"provider": provider, "name": "T", "channels": []int64{channel}}))
	sum := md5.Sum([]byte("pw"))
	account := decodeID(t, superOK(t, env, http.MethodPost, "/api/provider/accounts", map[string]any{
		"login": "multi", "pin_md5": hex.EncodeToString(sum[:]), "fullname": "Multi Node", "provider": provider,
	}))
	superOK(t, env, http.MethodPost, "/api/provider/account_subscriptions", map[string]any{"account": account, "tarif": tariff, "start": "2020-01-01T00:00:00Z"})

	status, body := env.Do(t, http.MethodPost, "/api/device/login", "", "", map[string]any{
		"provider": provider, "login": "multi", "password_md5": hex.EncodeToString(sum[:]),
		"device": map[string]any{"unique_id": "roaming", "class": "phone"},
	})
	if status != http.StatusOK {
		t.Fatalf("login: %d %s", status, body)
	}
	var login struct {
		Token    string `json:"token"`
		DeviceID int64  `json:"device_id"`
	}
	if err := json.Unmarshal(body, &login); err != nil {
		t.Fatal(err)
	}
	return login.DeviceID, http.Header{"Authorization": {"Bearer " + login.Token}}
}

// issueUpdate appends an `update` send to device, as no node's HTTP API
// does, and waits until every env's read model has applied it.
func issueUpdate(t *testing.T, device int64, envs ...*nodetest.Env) {
	t.Helper()
	e := domain.CommandsIssued{SendID: 77, Recipients: domain.RecipientDevices, IDs: []int64{device}, IssuedAt: time.Now().UTC(),
		Commands: []domain.IssuedCommand{{Kind: domain.CommandUpdate, Object: json.RawMessage(`{"command":"update"}`)}}}
	pos := envs[0].AppendEvent(t, domain.CommandStream(77), e)
	for _, env := range envs[1:] {
		env.WaitApplied(t, pos)
	}
}

func channelsStatus(t *testing.T, env *nodetest.Env, bearer http.Header) int {
	t.Helper()
	status, _ := env.DoHeader(t, http.MethodGet, "/api/device/channels", "", "", nil, bearer)
	return status
}

// Two nodes on one log sign device tokens with one key: a token from one
// works on the other, which waits for its read model to reach the token's
// position, and an `update` revokes it on both.
func TestDeviceTokensAcrossNodes(t *testing.T) {
	a := nodetest.Start(t)
	b := nodetest.StartWith(t, nodetest.Options{Share: a})
	device, bearer := deviceLogin(t, a)
	for name, env := range map[string]*nodetest.Env{"A": a, "B": b} {
		if status, body := env.DoHeader(t, http.MethodGet, "/api/device/channels", "", "", nil, bearer); status != http.StatusOK {
			t.Fatalf("channels on node %s: %d %s", name, status, body)
		}
	}

	issueUpdate(t, device, a, b)
	for name, env := range map[string]*nodetest.Env{"A": a, "B": b} {
		if status := channelsStatus(t, env, bearer); status != http.StatusUnauthorized {
			t.Fatalf("revoked token on node %s: %d", name, status)
		}
	}
}

// Tokens outlive a restart (the key is in the log), and so does their
// revocation (the read model snapshot keeps it).
func TestDeviceTokensAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	env := nodetest.StartWith(t, nodetest.Options{Dir: dir})
	device, bearer := deviceLogin(t, env)
	env.Close()
	env = nodetest.StartWith(t, nodetest.Options{Dir: dir})
	if status := channelsStatus(t, env, bearer); status != http.StatusOK {
		t.Fatalf("token after a restart: %d", status)
	}
	issueUpdate(t, device, env)
	env.Close()
	env = nodetest.StartWith(t, nodetest.Options{Dir: dir})
	if status := channelsStatus(t, env, bearer); status != http.StatusUnauthorized {
		t.Fatalf("revoked token after a restart: %d", status)
	}
}
