package wsgateway

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/gorilla/websocket"

	"tvsm/internal/platform/connlimit"
	"tvsm/internal/platform/wsframe"
)

// ErrClosed is returned by Upgrade once the hub is shutting down.
var ErrClosed = errors.New("wsgateway: hub closed")

// ErrAddressFull is returned by Upgrade when the client's address holds
// Options.MaxPerAddress websockets already. Nothing has been written: the
// caller answers (429).
var ErrAddressFull = errors.New("wsgateway: too many websockets from the client's address")

// Upgrade upgrades the request to a websocket for an already authenticated
// device, registers the connection (replacing an older one of the same
// device) and starts its goroutines. It returns as soon as the connection is
// running, so the HTTP handler and what it references can be collected. On
// failure a HTTP error response has been written (503 after shutdown),
// except for ErrAddressFull.
func (h *Hub) Upgrade(w http.ResponseWriter, r *http.Request, id Identity) error {
	deviceID := id.Device
	if h.closing.Load() {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return ErrClosed
	}
	key, keyed := connlimit.ParseKey(id.Address)
	if keyed && !h.addrs.Acquire(key) {
		h.stats.addressFull.Add(1)
		return fmt.Errorf("%w (%s holds %d)", ErrAddressFull, id.Address, h.opts.MaxPerAddress)
	}
	release := func() {
		if keyed {
			h.addrs.Release(key)
		}
	}
	ws, err := h.upgrader.Upgrade(hijacker{w}, r, nil)
	if err != nil {
		release()
		return fmt.Errorf("wsgateway: upgrade device %d: %w", deviceID, err)
	}
	// gorilla did the handshake; the connection reads and writes its
	// frames itself from here on, so gorilla's Conn and its buffers go.
	c := newConn(h, ws.NetConn(), id)
	c.release = release
	if !h.add(c) {
		// Shut down between the check and the upgrade: say goodbye inline.
		code, text, _ := ReasonShutdown.closeFrame()
		_ = c.writeControl(wsframe.OpClose, websocket.FormatCloseMessage(code, text))
		c.closeSocket()
		release()
		return ErrClosed
	}
	if h.opts.OnOpen != nil {
		c.hook(func() { h.opts.OnOpen(c) })
	}
	c.start()
	return nil
}

// hijacker hands gorilla's Upgrader the connection of a response writer
// that middleware may have wrapped: http.ResponseController finds the
// server's own through the wrappers' Unwrap methods.
type hijacker struct{ http.ResponseWriter }

// Hijack implements http.Hijacker.
func (w hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}
