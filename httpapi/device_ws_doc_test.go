package httpapi_test

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"tvsm/internal/testkit/apicheck"
	"tvsm/internal/testkit/nodetest"
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
