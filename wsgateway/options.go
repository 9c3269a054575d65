package wsgateway

import (
	"log/slog"
	"net/http"
	"time"
)

// Default values used by Options for zero fields.
const (
	DefaultQueueSize      = 64
	DefaultReadLimit      = 4 << 10
	DefaultPongWait       = 60 * time.Second
	DefaultPingPeriod     = 54 * time.Second
	DefaultWriteWait      = 10 * time.Second
	DefaultCloseGrace     = time.Second
	DefaultMaxBadMessages = 8
)

// Options configures a Hub. Zero fields take the Default* values.
type Options struct {
	// QueueSize is the number of messages a connection may have waiting for
	// the writer; when exceeded the connection is closed as a slow consumer.
	QueueSize int
	// ReadLimit is the largest device message accepted, in bytes; a larger
	// one closes the connection with 1009.
	ReadLimit int64
	// PongWait is how long the connection may stay silent (no message and no
	// pong) before it is dropped as dead. Messages move the deadline in
	// steps of a tenth of it, pongs every time: a device that answers no
	// ping may be dropped after 9/10 of PongWait since its last message. A
	// polled socket's silence is found by the hub's sweep, so up to a
	// quarter of min(WriteWait, PongWait) later.
	PongWait time.Duration
	// PingPeriod is how often pings are sent; it must be below PongWait and
	// is lowered to 9/10 of PongWait otherwise.
	PingPeriod time.Duration
	// WriteWait bounds every single write by the hub's sweep, which runs
	// every quarter of WriteWait (or of PongWait, if shorter) and closes a
	// connection whose write has lasted longer (ReasonWriteError): such a
	// write ends within 5/4 of WriteWait.
	WriteWait time.Duration
	// CloseGrace is how long the server waits for the device's close frame
	// after sending its own before closing the TCP connection.
	CloseGrace time.Duration
	// MaxBadMessages is the number of invalid device messages tolerated per
	// connection; the one reaching it closes the connection with 1008.
	// Negative means invalid messages are only counted and ignored.
	MaxBadMessages int
	// MaxPerAddress is the most websockets one client address
	// (Identity.Address, an IPv6 /64 counting as one address) holds at
	// once; Upgrade refuses more with ErrAddressFull. 0: no cap.
	MaxPerAddress int
	// CheckOrigin is passed to the websocket.Upgrader; nil means gorilla's
	// same-origin check (requests without an Origin header are accepted).
	CheckOrigin func(r *http.Request) bool
	// OnOpen is called once per connection after it is registered and
	// before it is read, on the upgrading goroutine. Messages sent
	// from it are queued and written first.
	OnOpen func(c *Conn)
	// OnMessage receives every valid device message. It runs on the
	// connection's reader: for a polled socket, a poller's goroutine that
	// reads many connections in turn, so it must not block; it may still be
	// called while a server-initiated close waits for the device.
	OnMessage func(c *Conn, m DeviceMessage)
	// OnClose is called once per connection after its reader and any writer
	// have finished with the socket, on the goroutine that tears it down.
	OnClose func(c *Conn, reason CloseReason)
	// Clock stamps Conn.ConnectedAt (default time.Now); tests inject one to
	// check delivery rules that depend on connection time.
	Clock func() time.Time
	// Logger receives the panics recovered in a connection's goroutines
	// and hooks (default slog.Default()); such a connection is closed with
	// ReasonInternalError, the others go on.
	Logger *slog.Logger
}

// withDefaults returns o with zero fields replaced by defaults.
func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.ReadLimit <= 0 {
		o.ReadLimit = DefaultReadLimit
	}
	if o.PongWait <= 0 {
		o.PongWait = DefaultPongWait
	}
	if o.PingPeriod <= 0 {
		o.PingPeriod = DefaultPingPeriod
	}
	if o.PingPeriod >= o.PongWait {
		o.PingPeriod = o.PongWait * 9 / 10
	}
	if o.WriteWait <= 0 {
		o.WriteWait = DefaultWriteWait
	}
	if o.CloseGrace <= 0 {
		o.CloseGrace = DefaultCloseGrace
	}
	if o.MaxBadMessages == 0 {
		o.MaxBadMessages = DefaultMaxBadMessages
	}
	return o
}
