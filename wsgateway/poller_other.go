//go:build !linux

package wsgateway

// Without epoll every connection reads with a goroutine of its own.

// pollers are none here.
type pollers struct{}

func (ps *pollers) pick(*Hub) *poller { return nil }

func (ps *pollers) stop() {}

// poller is never made here.
type poller struct{}

func (p *poller) add(*Conn) bool { return false }

func (p *poller) remove(*Conn) {}

func readSocket(int, []byte) (int, bool, error) { panic("wsgateway: no poller here") }
