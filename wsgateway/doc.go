// Package wsgateway is the websocket transport between tvsm and connected
// devices (set-top boxes, TVs, phones).
//
// A Hub is a sharded registry of device connections, by device, which also
// lists them by provider in one slice per provider (RangeProvider,
// RangeRegistered): a delivery round over a provider's thousands of devices
// reads contiguous memory instead of visiting every connection.
//
// gorilla/websocket does the opening handshake; from there a Conn reads
// and writes its frames itself (internal/platform/wsframe). On Linux a TCP
// socket leaves the runtime's poller: the hub's pollers (one goroutine per
// core, internal/platform/epoll) wait on their sockets and read each ready
// one with one read(2), answering pings and close frames and handing
// device messages to Options.OnMessage. Any other connection (TLS, other
// systems) has a reader goroutine for its whole life. Messages are written
// by a turn on the hub's write lanes, one write(2) per batch of queued
// messages, and by a writer goroutine only when the socket is full or a
// ping a runtime timer made due is to go. One lock orders every frame on
// the socket (messages, pongs, the close frame), and nothing follows a
// close frame. An idle polled connection so holds no goroutine and no
// buffer. Sends never block: a message is appended to a bounded
// per-connection queue, which lists the connection for a write turn if
// none is under way, and a device whose queue is full is disconnected as a
// slow consumer. The hub's sweep ends writes that last longer than
// WriteWait and polled connections silent for longer than PongWait.
//
// Protocol. Server → device, one text message per command:
//
//	{"type":"command","id":"<delivery id>","command":{...}}
//
// Device → server:
//
//	{"type":"ack","id":"..."}      on receipt
//	{"type":"confirm","id":"..."}  when the user confirms
//
// Close codes sent by the server:
//
//	1001 going away      server shutdown
//	1008 policy          too many invalid device messages (Options.MaxBadMessages)
//	1009 too big         a device message exceeded Options.ReadLimit
//	1013 try again later slow consumer (send queue overflowed)
//	4001 replaced        a newer connection of the same device took over
//
// One connection per device: when a device connects again while its previous
// connection is still registered (reconnect race, half-open TCP), the newer
// connection replaces the older one, which is closed with code 4001.
//
// Authentication is not done here: the caller authenticates the request and
// passes the device id to Hub.Upgrade.
package wsgateway
