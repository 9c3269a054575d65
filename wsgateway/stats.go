package wsgateway

import "sync/atomic"

// Stats is a snapshot of hub counters, suitable for exporting as metrics.
// All fields but Connections are monotonic counters.
type Stats struct {
	Connections    int    // currently registered connections (gauge)
	Accepted       uint64 // connections registered since start
	MessagesSent   uint64 // messages written to sockets
	SendMisses     uint64 // Send calls no connection took
	SlowConsumers  uint64 // connections closed because their queue overflowed
	BadMessages    uint64 // invalid device messages received
	Replaced       uint64 // connections replaced by a newer one of the same device
	Timeouts       uint64 // connections dropped for missing pongs
	ClosedByClient uint64 // connections closed by the device
	AddressFull    uint64 // upgrades refused: the address held Options.MaxPerAddress
}

// counters are the hub's live counters.
type counters struct {
	accepted, sent, misses, slow, bad, replaced, timeouts, clientClosed, addressFull atomic.Uint64
}

// closed counts a connection end.
func (c *counters) closed(r CloseReason) {
	switch r {
	case ReasonSlowConsumer:
		c.slow.Add(1)
	case ReasonReplaced:
		c.replaced.Add(1)
	case ReasonTimeout:
		c.timeouts.Add(1)
	case ReasonClientClosed:
		c.clientClosed.Add(1)
	}
}
