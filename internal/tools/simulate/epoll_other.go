//go:build !linux

package simulate

import (
	"context"
	"errors"
	"net"
)

// epollSupported tells that ReaderEpoll runs here: not on this system,
// where each device reads with a goroutine of its own.
const epollSupported = false

// poller is never made here.
type poller struct{}

func newPoller() (*poller, error) { return nil, errors.New("simulate: epoll is Linux only") }

func (p *poller) stop() {}

func (p *poller) serve(context.Context, int, []byte, session) error {
	return errors.New("simulate: epoll is Linux only")
}

func takeFD(net.Conn) (int, error) { return -1, errors.New("simulate: epoll is Linux only") }
