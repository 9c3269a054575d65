package httpapi_test

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"tvsm/internal/testkit/apicheck"
	"tvsm/internal/testkit/nodetest"
	"tvsm/wsgateway"
)

// checkDocumented fails t unless data matches the schema name of the
// Device API's document: the websocket's messages and close codes, which
// OpenAPI cannot attach to an operation.
func checkDocumented(t *testing.T, name string, data []byte) {
	t.Helper()
	c, err := apicheck.Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Schema("device", name, data); err != nil {
		t.Error(err)
	}
}

// closeCode waits for ws to be closed by the server and returns the code.
func closeCode(t *testing.T, ws *websocket.Conn) int {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, _, err := ws.ReadMessage()
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return ce.Code
		}
		if err != nil {
			t.Fatalf("reading until the close: %v", err)
		}
	}
}

// The websocket behaves as the Device API's document says: a newer
// connection of the device replaces the older one (4001), an update
// command drops the device's authorisation (4003), and both codes are the
// document's WsCloseCode; commands arrive as WsCommand (readCommand).
func TestDeviceWebsocketAsDocumented(t *testing.T) {
	r := newDevRig(t, nodetest.Options{})
	l := r.loginOK(t, r.login, "doc-box")
	first := dialDevice(t, r, l)
	defer first.Close()
	second := dialDevice(t, r, l)
	defer second.Close()
	code := closeCode(t, first)
	if code != 4001 {
		t.Errorf("the replaced connection closed with %d, want 4001", code)
	}
	checkDocumented(t, "WsCloseCode", []byte(strconv.Itoa(code)))

	status, body := r.env.Super(t, http.MethodPost, "/api/provider/commands/send/devices", map[string]any{
		"ids": []int64{l.DeviceID}, "commands": []map[string]any{{"command": "update"}},
	})
	if status != http.StatusOK {
		t.Fatalf("send: %d %s", status, body)
	}
	if msg := readCommand(t, second); msg.Type != "command" {
		t.Errorf("message %+v", msg)
	}
	code = closeCode(t, second)
	if code != 4003 {
		t.Errorf("the revoked connection closed with %d, want 4003", code)
	}
	checkDocumented(t, "WsCloseCode", []byte(strconv.Itoa(code)))
}

// A handshake over the per-address websocket cap is answered as the Device
// document says (429, the error body, Retry-After; apicheck checks the
// answer against the document), and the connection holding the place
// stays.
func TestWebsocketAddressCapAsDocumented(t *testing.T) {
	r := newDevRig(t, nodetest.Options{Sockets: wsgateway.Options{MaxPerAddress: 1}})
	first := r.loginOK(t, r.login, "cap-box-1")
	second := r.loginOK(t, r.login, "cap-box-2")
	ws := dialDevice(t, r, first)
	defer ws.Close()

	wsURL := "ws" + strings.TrimPrefix(r.env.URL, "http") + "/api/device/ws"
	refused, resp, err := websocket.DefaultDialer.Dial(wsURL, http.Header{"Authorization": {"Bearer " + second.Token}})
	if err == nil {
		refused.Close()
		t.Fatal("a second websocket from the address was accepted over a cap of 1")
	}
	if resp == nil {
		t.Fatalf("dial: %v, no answer", err)
	}
	body, _ := io.ReadAll(resp.Body)
	devFails(t, resp.StatusCode, body, http.StatusTooManyRequests, "too_many_requests")
	if resp.Header.Get("Retry-After") == "" {
		t.Errorf("429 without Retry-After: %v", resp.Header)
	}
	if !r.env.Node.Hub.Connected(first.DeviceID) {
		t.Error("the connection holding the place was dropped")
	}
}
