package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"tvsm/domain"
	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/testkit/testutil"
)

// The whole path through one node, as an operator's integration and a set-top
// box see it: the box logs in and holds a websocket; the provider sends a
// confirm message; the box gets it, acks and confirms; the receipts say so;
// the box reports viewing; once the day closes, the statistics count it.

func TestNodeEndToEnd(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC))
	r := newDevRig(t, nodetest.Options{Clock: clock.Now, Timers: clock})
	l := r.loginOK(t, r.login, "e2e-box")

	ws := dialDevice(t, r, l)
	defer ws.Close()

	// The provider sends a confirm message to the account.
	status, body := r.env.Super(t, http.MethodPost, "/api/provider/commands/send/accounts?broadcast=false", map[string]any{
		"ids":      []int64{r.account},
		"commands": []map[string]any{{"command": "user_message", "type": "confirm", "title": "Bill", "text": "Pay by Friday", "vendor_field": 7}},
	})
	if status != http.StatusOK {
		t.Fatalf("send: %d %s", status, body)
	}
	var sent struct {
		Response bool  `json:"response"`
		SendID   int64 `json:"send_id"`
	}
	if err := json.Unmarshal(body, &sent); err != nil || !sent.Response || sent.SendID <= 0 {
		t.Fatalf("send answer %s (%v)", body, err)
	}

	// The box gets the command object as the provider sent it.
	msg := readCommand(t, ws)
	if want := domain.DeliveryID(sent.SendID, 0, l.DeviceID); msg.ID != want {
		t.Errorf("delivery id %q, want %q", msg.ID, want)
	}
	var obj map[string]any
	if err := json.Unmarshal(msg.Command, &obj); err != nil || obj["text"] != "Pay by Friday" || obj["vendor_field"] != float64(7) {
		t.Errorf("command object %s (%v)", msg.Command, err)
	}
	for _, kind := range []string{"ack", "confirm"} {
		receipt, _ := json.Marshal(map[string]string{"type": kind, "id": msg.ID})
		checkDocumented(t, "WsDeviceMessage", receipt)
		if err := ws.WriteMessage(websocket.TextMessage, receipt); err != nil {
			t.Fatal(err)
		}
	}

	// The receipts show the device confirmed.
	path := fmt.Sprintf("/api/provider/commands/%d", sent.SendID)
	waitFor(t, "receipts to show the confirmation", func() bool {
		status, body := r.env.Super(t, http.MethodGet, path, nil)
		return status == http.StatusOK && strings.Contains(string(body), fmt.Sprintf(`"device":%d,"status":"confirmed"`, l.DeviceID))
	})
	// The node's metrics count the connection and the delivery.
	status, body = r.env.Super(t, http.MethodGet, "/metrics", nil)
	for _, want := range []string{"\ntvsm_ws_connections 1\n", "\ntvsm_dispatch_deliveries_total 1\n",
		"\ntvsm_dispatch_acks_total 1\n",
		// The send's own append carried the node's claim: no claim on its own.
		"\ntvsm_dispatch_send_claims_total 1\n", "\ntvsm_dispatch_claims_total 0\n", "\ntvsm_dispatch_confirms_total 1\n", "\ntvsm_dispatch_claim_failures_total 0\n",
		"\n# TYPE tvsm_dispatch_acks_total counter\n", "\n# TYPE tvsm_ws_connections gauge\n"} {
		if status != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("/metrics (%d) lacks %q:\n%s", status, want, body)
		}
	}

	// Viewing today; tomorrow's first event closes the day.
	start := clock.Now().Add(-30 * time.Minute).Format("2006-01-02T15:04:05-0700")
	status, body = r.deviceDo(t, http.MethodPost, "/api/device/viewing", l.Token, map[string]any{
		"sessions": []map[string]any{{"channel_id": r.channels[0], "mode": "live", "start": start, "seconds": 1800}},
	})
	if status != http.StatusNoContent {
		t.Fatalf("viewing: %d %s", status, body)
	}
	clock.Advance(24 * time.Hour)
	r.newAccount(t, "next-day", nil)

	var device struct {
		ProviderStat []struct {
			ProviderID int64 `json:"provider_id"`
			DeviceStat []struct {
				Class         string `json:"class"`
				LiveMinutes   int64  `json:"live_minutes"`
				UniqueDevices int64  `json:"unique_devices"`
			} `json:"device_stat"`
		} `json:"provider_stat"`
	}
	statsPath := fmt.Sprintf("/api/stats/device?from=2026-05-04&to=2026-05-04&provider_id=%d", r.provider)
	waitFor(t, "the closed day in the statistics", func() bool {
		status, body := r.env.Super(t, http.MethodGet, statsPath, nil)
		if status != http.StatusOK || json.Unmarshal(body, &device) != nil || len(device.ProviderStat) != 1 {
			return false
		}
		for _, c := range device.ProviderStat[0].DeviceStat {
			if c.Class == "stb" && c.LiveMinutes == 30 && c.UniqueDevices == 1 {
				return true
			}
		}
		return false
	})

	status, body = r.env.Super(t, http.MethodGet, fmt.Sprintf("/api/stats/subscription?from=2026-05-04&to=2026-05-04&provider_id=%d", r.provider), nil)
	if status != http.StatusOK {
		t.Fatalf("subscription statistics: %d %s", status, body)
	}
	want := fmt.Sprintf(`{"tariff_id":%d,"name":"Basic","enabled_count":1,"enabled_device_count":1,"active_count":1,"disabled_count":0,"enabled_account_with_devices":1}`, r.tariff)
	if !strings.Contains(string(body), want) {
		t.Errorf("subscription statistics %s\nwant an element %s", body, want)
	}
}

// dialDevice opens the device's websocket and waits until the node has it.
func dialDevice(t *testing.T, r *devRig, l devLogin) *websocket.Conn {
	t.Helper()
	wsURL := "ws" + strings.TrimPrefix(r.env.URL, "http") + "/api/device/ws"
	ws, resp, err := websocket.DefaultDialer.Dial(wsURL, http.Header{"Authorization": {"Bearer " + l.Token}})
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	waitFor(t, "the connection", func() bool { return r.env.Node.Hub.Connected(l.DeviceID) })
	return ws
}

type commandMessage struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Command json.RawMessage `json:"command"`
}

// readCommand reads the next server message, which must be a command as
// the Device API's document describes it (WsCommand).
func readCommand(t *testing.T, ws *websocket.Conn) commandMessage {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, data, err := ws.ReadMessage()
	if err != nil {
		t.Fatalf("reading a command: %v", err)
	}
	checkDocumented(t, "WsCommand", data)
	var m commandMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("reading a command: %v", err)
	}
	if m.Type != "command" {
		t.Fatalf("message type %q", m.Type)
	}
	return m
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A delayed command whose post_time passes while the node is down is
// delivered when the node is back, to the devices that connect within a
// minute of its start; the receipts say it is being sent, then that it
// expired because no node ran at its send time, with the devices it
// reached.
func TestDelayedCommandMissedWhileTheNodeWasDown(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC))
	opts := nodetest.Options{Dir: t.TempDir(), Clock: clock.Now, Timers: clock}
	r := newDevRig(t, opts)
	l := r.loginOK(t, r.login, "late-box")
	postTime := clock.Now().Add(10 * time.Minute)
	status, body := r.env.Super(t, http.MethodPost, "/api/provider/commands/send/accounts?broadcast=false", map[string]any{
		"ids": []int64{r.account},
		"commands": []map[string]any{{"command": "user_message", "type": "notify", "text": "maintenance at noon",
			"post_time": postTime.Format("2006-01-02T15:04:05")}},
	})
	if status != http.StatusOK {
		t.Fatalf("send: %d %s", status, body)
	}
	sendID := decodeObj(t, body).int(t, "send_id")
	r.env.Close()
	clock.Advance(20 * time.Minute) // post_time passes while the node is down

	r.env = nodetest.StartWith(t, opts)
	ws := dialDevice(t, r, l)
	defer ws.Close()
	if msg := readCommand(t, ws); msg.ID != domain.DeliveryID(sendID, 0, l.DeviceID) {
		t.Fatalf("delivery %q", msg.ID)
	}
	type receipts struct {
		Commands []struct {
			State  string  `json:"state"`
			Reason *string `json:"reason"`
			Counts struct {
				Sent int `json:"sent"`
			} `json:"counts"`
		} `json:"commands"`
	}
	read := func() receipts {
		status, body := r.env.Super(t, http.MethodGet, fmt.Sprintf("/api/provider/commands/%d", sendID), nil)
		var v receipts
		if status != http.StatusOK || json.Unmarshal(body, &v) != nil || len(v.Commands) != 1 {
			t.Fatalf("receipts: %d %s", status, body)
		}
		return v
	}
	waitFor(t, "the late delivery in the receipts", func() bool {
		c := read().Commands[0]
		return c.State == "sending" && c.Reason == nil && c.Counts.Sent == 1
	})
	clock.Advance(time.Minute) // the late window ends
	waitFor(t, "the expiry in the receipts", func() bool {
		c := read().Commands[0]
		return c.State == "expired" && c.Reason != nil && *c.Reason == domain.ExpiredMissedSendTime && c.Counts.Sent == 1
	})
}
