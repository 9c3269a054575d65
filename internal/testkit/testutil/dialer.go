package testutil

import (
	"context"
	"net"
	"time"

	"github.com/gorilla/websocket"
)

// SmallBufferDialer dials websockets with small read buffers (gorilla's
// and the socket's), so that a device that does not read fills its socket
// soon: for tests of slow and stuck devices.
func SmallBufferDialer() *websocket.Dialer {
	return &websocket.Dialer{
		HandshakeTimeout: 5 * time.Second,
		ReadBufferSize:   256,
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err == nil {
				_ = c.(*net.TCPConn).SetReadBuffer(4096)
			}
			return c, err
		},
	}
}
