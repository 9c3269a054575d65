//go:build !linux

package wsgateway

import "net"

// Elsewhere than on Linux a connection's socket stays with the runtime's
// poller: a reader goroutine reads it and writes go through net.Conn.

// socket is never taken here (takeSocket reports false).
type socket struct{}

// pollSet has no pollers here.
type pollSet struct{}

func (*pollSet) stop() {}

func (h *Hub) takeSocket(*socket, net.Conn, uint64) bool { return false }

func (*socket) register(*Conn) error            { return net.ErrClosed }
func (*socket) write([]byte, bool) (int, error) { return 0, net.ErrClosed }
func (*socket) abort()                          {}
func (*socket) close(*Conn)                     {}
