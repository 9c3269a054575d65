//go:build !linux

package epoll

import (
	"errors"
	"net"
)

// Supported says that Pollers run here: not on this system.
const Supported = false

// The events a socket may be watched for: none here.
const (
	In, Out, RDHup, Hup, Err, ET = 0, 0, 0, 0, 0, 0
)

var errUnsupported = errors.New("epoll: Linux only")

// Poller is never made here.
type Poller struct{}

// New fails here.
func New(func(fd int32, events uint32)) (*Poller, error) { return nil, errUnsupported }

func (*Poller) Add(int, uint32) error { return errUnsupported }
func (*Poller) Del(int)               {}
func (*Poller) Stop()                 {}

// TakeFD fails here.
func TakeFD(*net.TCPConn) (int, error) { return -1, errUnsupported }

func Read(int, []byte) (int, error)  { return 0, errUnsupported }
func Write(int, []byte) (int, error) { return 0, errUnsupported }
