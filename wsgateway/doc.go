// Package wsgateway is the websocket transport between tvsm and connected
// devices (set-top boxes, TVs, phones).
//
// A Hub is a sharded registry of device connections, by device, which also
// lists them by provider in one slice per provider (RangeProvider,
// RangeRegistered): a delivery round over a provider's thousands of devices
// reads contiguous memory instead of visiting every connection.
//
// gorilla/websocket does the opening handshake; from there a Conn reads
// and writes its frames itself (internal/platform/wsframe), on a TCP
// socket with read(2) and write(2) through the runtime's poller: an
// acknowledgement costs one read, and a message one write, with no
// buffer held between them. Each Conn has a reader goroutine for its
// whole life, which answers pings and close frames and hands device
// messages to Options.OnMessage, and a writer goroutine only while there
// is something to write: messages, or a ping a runtime timer made due.
// One lock orders every frame on the socket (the writer's, the reader's
// pongs, the close frame), and nothing follows a close frame. An idle
// connection so holds one goroutine stack and no buffer. Sends never
// block: a message is appended to a bounded per-connection queue, which
// starts the writer if none runs, and a device whose queue is full is
// disconnected as a slow consumer.
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
