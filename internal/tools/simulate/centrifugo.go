package simulate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"tvsm/internal/platform/schedule"
)

// A Centrifugo client speaks Centrifugo's JSON protocol
// (https://centrifugal.dev/docs/transports/client_protocol): commands and
// replies are JSON objects, several to a websocket message separated by
// newlines; a reply carries its command's id, a push (a publication in a
// channel) none; an empty object from the server is a ping, answered by an
// empty object.

// Ids of the two commands a client sends.
const (
	centrifugoConnectID   = 1
	centrifugoSubscribeID = 2
)

// centrifugoHandshake bounds the wait for the replies to connect and
// subscribe.
const centrifugoHandshake = 30 * time.Second

// centrifugoDevice runs one Centrifugo client until ctx is done: connect,
// subscribe, count publications; after a drop, connect again.
func (s *Sim) centrifugoDevice(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.centrifugoSession(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.fail(err)
		}
		s.c.Reconnects.Add(1)
		schedule.Sleep(ctx, jitter(backoff))
		backoff = min(2*backoff, 10*time.Second)
	}
}

// centrifugoSession holds one websocket to Centrifugo until it ends.
func (s *Sim) centrifugoSession(ctx context.Context) error {
	wsURL := "ws" + strings.TrimPrefix(s.opts.URL, "http") + "/connection/websocket"
	h := &centrifugoHandler{s: s, p: newCentrifugoParser(s.opts.CentrifugoChannel)}
	h.channel, _ = json.Marshal(s.opts.CentrifugoChannel)
	_, err := s.run(ctx, session{url: wsURL, h: h, handshakeTimeout: centrifugoHandshake,
		hello: fmt.Appendf(nil, `{"id":%d,"connect":{}}`, centrifugoConnectID)})
	if h.subscribed {
		s.c.Connected.Add(-1)
	}
	return err
}

// centrifugoHandler subscribes once connected, then counts publications
// and answers pings.
type centrifugoHandler struct {
	s          *Sim
	p          *centrifugoParser
	channel    []byte // JSON
	subscribed bool
	got        int
}

func (h *centrifugoHandler) message(data []byte, out replies) error {
	s := h.s
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		kind, reply := h.p.parse(line)
		switch kind {
		case centrifugoPublication:
			arrived := time.Now()
			s.c.Commands.Add(1)
			h.got++
			s.gotCommand(h.got, arrived)
			if h.got == s.opts.StopAfterCommands {
				s.gotAll(arrived)
			}
		case centrifugoPing:
			if err := out.send([]byte("{}")); err != nil {
				return err
			}
		case centrifugoReply:
			if reply.Error != nil {
				return fmt.Errorf("centrifugo: command %d: error %d: %s", reply.ID, reply.Error.Code, reply.Error.Message)
			}
			switch reply.ID {
			case centrifugoConnectID:
				msg := fmt.Appendf(nil, `{"id":%d,"subscribe":{"channel":%s}}`, centrifugoSubscribeID, h.channel)
				if err := out.send(msg); err != nil {
					return err
				}
			case centrifugoSubscribeID:
				if !h.subscribed {
					h.subscribed = true
					out.settled()
					s.c.Connected.Add(1)
				}
			}
		}
	}
	return nil
}

// centrifugoKind is what a message of Centrifugo's is to a client.
type centrifugoKind int

const (
	centrifugoOther       centrifugoKind = iota
	centrifugoPing                       // {}
	centrifugoPublication                // a publication in the client's channel
	centrifugoReply                      // the reply to a command
)

// centrifugoMessage is the part of a server message a client reads.
type centrifugoMessage struct {
	ID    uint32           `json:"id"`
	Error *centrifugoError `json:"error"`
	Push  *struct {
		Channel string          `json:"channel"`
		Pub     json.RawMessage `json:"pub"`
	} `json:"push"`
}

type centrifugoError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// centrifugoParser takes a publication in the form the server writes apart
// by hand, for little CPU as the tvsm device does its commands: head,
// then the publication object, then the two braces closing the push and
// the message. Any other form is decoded.
type centrifugoParser struct {
	channel string
	head    []byte
}

// newCentrifugoParser reads the messages of a client subscribed to
// channel. head is how the server's publications in it begin, up to the
// publication object.
func newCentrifugoParser(channel string) *centrifugoParser {
	name, _ := json.Marshal(channel)
	return &centrifugoParser{channel: channel, head: fmt.Appendf(nil, `{"push":{"channel":%s,"pub":`, name)}
}

// parse tells what one message (one line of a websocket message) is; for
// a reply it returns its id and error.
func (p *centrifugoParser) parse(line []byte) (centrifugoKind, centrifugoMessage) {
	if rest, found := bytes.CutPrefix(line, p.head); found && bytes.HasSuffix(rest, []byte("}}")) {
		// A scan, not a decode: the object must end where the push does.
		if pub := rest[:len(rest)-2]; len(pub) > 0 && pub[0] == '{' && json.Valid(pub) {
			return centrifugoPublication, centrifugoMessage{}
		}
	}
	if string(line) == "{}" {
		return centrifugoPing, centrifugoMessage{}
	}
	// Another form: decode it.
	var m centrifugoMessage
	if json.Unmarshal(line, &m) != nil {
		return centrifugoOther, m
	}
	switch {
	case m.Push != nil && m.Push.Channel == p.channel && isObject(m.Push.Pub):
		return centrifugoPublication, m
	case m.ID > 0:
		return centrifugoReply, m
	}
	return centrifugoOther, m
}

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '{'
}
