package wsgateway

import (
	"github.com/gorilla/websocket"
)

// CloseReason says why a connection ended.
type CloseReason int

// Close reasons reported to Options.OnClose.
const (
	ReasonClientClosed  CloseReason = iota + 1 // the device sent a close frame
	ReasonReadError                            // the socket failed or reached EOF without a close frame
	ReasonTimeout                              // no message or pong within PongWait (dead peer)
	ReasonMessageTooBig                        // a device message exceeded ReadLimit
	ReasonBadMessages                          // MaxBadMessages invalid messages
	ReasonWriteError                           // a write failed or timed out
	ReasonSlowConsumer                         // the send queue overflowed
	ReasonReplaced                             // a newer connection of the same device took over
	ReasonShutdown                             // the hub was shut down
	ReasonRevoked                              // the device's authorisation was dropped (unbound, update command)
	ReasonInternalError                        // a panic in the connection's goroutines or hooks (recovered, logged, counted)
)

var reasonNames = [...]string{
	ReasonClientClosed:  "client_closed",
	ReasonReadError:     "read_error",
	ReasonTimeout:       "timeout",
	ReasonMessageTooBig: "message_too_big",
	ReasonBadMessages:   "bad_messages",
	ReasonWriteError:    "write_error",
	ReasonSlowConsumer:  "slow_consumer",
	ReasonReplaced:      "replaced",
	ReasonShutdown:      "shutdown",
	ReasonRevoked:       "revoked",
	ReasonInternalError: "internal_error",
}

// String returns a stable snake_case name usable as a metric label.
func (r CloseReason) String() string {
	if r > 0 && int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "unknown"
}

// Application close codes (the 4000–4999 range of RFC 6455 §7.4.2).
const (
	// CloseReplaced is sent to a connection replaced by a newer connection
	// of the same device; the device should not reconnect in a loop.
	CloseReplaced = 4001
	// CloseRevoked is sent when the device's authorisation was dropped; it
	// must log in again before reconnecting.
	CloseRevoked = 4003
)

// closeFrame returns the close frame the server sends for a reason it
// initiated; ok is false when no frame is to be sent (the peer is gone or
// gorilla already sent one).
func (r CloseReason) closeFrame() (code int, text string, ok bool) {
	switch r {
	case ReasonShutdown:
		return websocket.CloseGoingAway, "server shutdown", true
	case ReasonReplaced:
		return CloseReplaced, "replaced by a newer connection", true
	case ReasonRevoked:
		return CloseRevoked, "authorisation dropped: log in again", true
	case ReasonSlowConsumer:
		return websocket.CloseTryAgainLater, "slow consumer", true
	case ReasonBadMessages:
		return websocket.ClosePolicyViolation, "invalid messages", true
	case ReasonInternalError:
		return websocket.CloseInternalServerErr, "internal error", true
	}
	return 0, "", false
}
