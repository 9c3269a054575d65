// Package wsframe decodes and encodes the websocket frames of RFC 6455
// (https://www.rfc-editor.org/rfc/rfc6455#section-5) from bytes as they
// arrive on a socket, for readers that take sockets from the Go runtime
// and wait on many of them with epoll: the device gateway reading what
// devices send, and the device simulator reading what a server sends.
//
// A Decoder takes bytes in any pieces: a frame split over reads waits for
// its rest, the fragments of a message are joined, and a frame the peer
// must not send is refused with an *Error carrying the close code to
// answer (1002 for a protocol error, 1009 for a message over the limit).
package wsframe

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"unicode/utf8"
)

// Opcodes.
const (
	OpContinuation = 0x0
	OpText         = 0x1
	OpBinary       = 0x2
	OpClose        = 0x8
	OpPing         = 0x9
	OpPong         = 0xa
)

// Close codes a Decoder's errors carry, and the one a close frame without
// a body stands for.
const (
	CloseProtocolError    = 1002
	CloseNoStatusReceived = 1005
	CloseMessageTooBig    = 1009
)

// maxControlPayload bounds a control frame's payload.
const maxControlPayload = 125

// minReadSpace is the free room Space offers at least.
const minReadSpace = 512

// Error is a frame the peer must not send; the connection is done, and
// Code is the close code to answer with.
type Error struct {
	Code   int
	Reason string
}

func (e *Error) Error() string { return fmt.Sprintf("websocket: %s (close %d)", e.Reason, e.Code) }

func protocolError(format string, args ...any) *Error {
	return &Error{Code: CloseProtocolError, Reason: fmt.Sprintf(format, args...)}
}

// Decoder decodes one connection's incoming frames.
type Decoder struct {
	// Masked says the peer is a client, whose frames must be masked (a
	// server reading); false, a server, whose frames must not be.
	Masked bool
	// Limit bounds a message, all its fragments together: a longer one is
	// an *Error with CloseMessageTooBig. It must be above 0.
	Limit int

	buf        []byte // received: buf[start:] is not decoded yet
	start      int
	need       int    // bytes the frame at start needs in all, once its header is in
	scratch    bool   // buf is the caller's scratch buffer, not the decoder's
	msg        []byte // the fragmented message so far
	msgOp      byte
	fragmented bool
}

// Space returns room to read into at the end of what is buffered. With a
// scratch buffer (shared by the connections of one reader) and nothing
// buffered, the room is the scratch buffer's: call Keep once the frames
// are decoded, so that a partial frame left in it is copied out. With a
// nil scratch buffer the decoder reads into a buffer of its own, kept.
func (d *Decoder) Space(scratch []byte) []byte {
	if d.start == len(d.buf) {
		d.buf, d.start = d.buf[:0], 0
		if scratch != nil {
			d.buf, d.scratch = scratch[:0], true
		}
	}
	want := max(minReadSpace, d.need-(len(d.buf)-d.start))
	if cap(d.buf)-len(d.buf) < want {
		if d.start > 0 && !d.scratch {
			n := copy(d.buf, d.buf[d.start:])
			d.buf, d.start = d.buf[:n], 0
		}
		if cap(d.buf)-len(d.buf) < want {
			rest := d.buf[d.start:]
			grown := make([]byte, len(rest), max(len(rest)+want, 2*cap(d.buf)))
			copy(grown, rest)
			d.buf, d.start, d.scratch = grown, 0, false
		}
	}
	return d.buf[len(d.buf):cap(d.buf)]
}

// Filled takes n bytes read into the room Space returned.
func (d *Decoder) Filled(n int) { d.buf = d.buf[:len(d.buf)+n] }

// Feed appends data (for bytes read elsewhere, and tests).
func (d *Decoder) Feed(data []byte) {
	for len(data) > 0 {
		n := copy(d.Space(nil), data)
		d.Filled(n)
		data = data[n:]
	}
}

// Keep lets go of the scratch buffer: what is not decoded yet is copied
// into memory of the decoder's own; with nothing left, it holds none.
func (d *Decoder) Keep() {
	if !d.scratch {
		return
	}
	d.scratch = false
	rest := d.buf[d.start:]
	d.buf, d.start = nil, 0
	if len(rest) > 0 {
		d.buf = append(make([]byte, 0, max(len(rest), minReadSpace)), rest...)
	}
}

// Buffered returns the bytes received and not decoded yet.
func (d *Decoder) Buffered() int { return len(d.buf) - d.start }

// Next returns the next whole message (OpText or OpBinary, its fragments
// joined) or control frame (OpClose, OpPing, OpPong) and its payload,
// unmasked, valid until the next call of Space, Feed or Keep; ok is false
// until more bytes are in. An error ends the connection.
func (d *Decoder) Next() (op byte, payload []byte, ok bool, err error) {
	for {
		fin, op, payload, ok, err := d.frame()
		if !ok || err != nil {
			return 0, nil, false, err
		}
		switch {
		case op >= OpClose:
			if op == OpClose {
				if err := checkClose(payload); err != nil {
					return 0, nil, false, err
				}
			}
			return op, payload, true, nil
		case op == OpContinuation:
			d.msg = append(d.msg, payload...)
			if fin {
				d.fragmented = false
				msg := d.msg
				d.msg = nil // a long message's memory is not kept
				return d.msgOp, msg, true, nil
			}
		default: // text or binary
			if fin {
				return op, payload, true, nil
			}
			d.fragmented, d.msgOp = true, op
			d.msg = append([]byte(nil), payload...)
		}
	}
}

// frame decodes the frame at start, if it is all in.
func (d *Decoder) frame() (fin bool, op byte, payload []byte, ok bool, err error) {
	b := d.buf[d.start:]
	if len(b) < 2 {
		return false, 0, nil, false, nil
	}
	fin, op = b[0]&0x80 != 0, b[0]&0x0f
	masked := b[1]&0x80 != 0
	if b[0]&0x70 != 0 {
		return false, 0, nil, false, protocolError("reserved bits set (no extension was agreed)")
	}
	if masked != d.Masked {
		return false, 0, nil, false, protocolError("frame masked %t, must be %t", masked, d.Masked)
	}
	size := uint64(b[1] & 0x7f)
	switch op {
	case OpContinuation:
		if !d.fragmented {
			return false, 0, nil, false, protocolError("continuation with no message begun")
		}
	case OpText, OpBinary:
		if d.fragmented {
			return false, 0, nil, false, protocolError("new message inside a fragmented one")
		}
	case OpClose, OpPing, OpPong:
		if !fin || size > maxControlPayload {
			return false, 0, nil, false, protocolError("control frame fragmented or over %d bytes", maxControlPayload)
		}
	default:
		return false, 0, nil, false, protocolError("opcode %d", op)
	}
	head := 2
	switch size {
	case 126:
		head = 4
		if len(b) < head {
			return false, 0, nil, false, nil
		}
		size = uint64(binary.BigEndian.Uint16(b[2:]))
	case 127:
		head = 10
		if len(b) < head {
			return false, 0, nil, false, nil
		}
		size = binary.BigEndian.Uint64(b[2:])
	}
	if op < OpClose && (size > uint64(d.Limit) || uint64(len(d.msg))+size > uint64(d.Limit)) {
		return false, 0, nil, false, &Error{Code: CloseMessageTooBig, Reason: fmt.Sprintf("message over %d bytes", d.Limit)}
	}
	var key []byte
	if masked {
		if len(b) < head+4 {
			return false, 0, nil, false, nil
		}
		key = b[head : head+4 : head+4]
		head += 4
	}
	d.need = head + int(size)
	if len(b) < d.need {
		return false, 0, nil, false, nil
	}
	payload = b[head:d.need]
	if masked {
		for i := range payload {
			payload[i] ^= key[i&3]
		}
	}
	d.start += d.need
	d.need = 0
	return fin, op, payload, true, nil
}

// checkClose refuses a close frame's body as RFC 6455 section 7.4 does: one
// byte alone, a code no endpoint may send, or a reason not in UTF-8.
func checkClose(payload []byte) error {
	if len(payload) == 0 {
		return nil
	}
	if len(payload) == 1 {
		return protocolError("close frame of one byte")
	}
	if code := int(binary.BigEndian.Uint16(payload)); !validReceivedCode(code) {
		return protocolError("bad close code %d", code)
	}
	if !utf8.Valid(payload[2:]) {
		return protocolError("close reason not in UTF-8")
	}
	return nil
}

// validReceivedCode reports whether a peer may send close code code: the
// codes of the IANA registry an endpoint sends
// (https://www.iana.org/assignments/websocket/websocket.xhtml), and the
// ranges left to libraries and applications.
func validReceivedCode(code int) bool {
	switch code {
	case 1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013:
		return true
	}
	return code >= 3000 && code <= 4999
}

// CloseFrame reads a close frame's payload (as Next returned it): its code
// (CloseNoStatusReceived when it has none) and reason.
func CloseFrame(payload []byte) (code int, reason string) {
	if len(payload) < 2 {
		return CloseNoStatusReceived, ""
	}
	return int(binary.BigEndian.Uint16(payload)), string(payload[2:])
}

// AppendFrame appends a final frame of op carrying payload: masked with a
// random key when mask is set, as a client's must be.
func AppendFrame(dst []byte, op byte, payload []byte, mask bool) []byte {
	var maskBit byte
	if mask {
		maskBit = 0x80
	}
	dst = append(dst, 0x80|op)
	switch n := len(payload); {
	case n <= 125:
		dst = append(dst, maskBit|byte(n))
	case n <= 0xffff:
		dst = append(dst, maskBit|126)
		dst = binary.BigEndian.AppendUint16(dst, uint16(n))
	default:
		dst = append(dst, maskBit|127)
		dst = binary.BigEndian.AppendUint64(dst, uint64(n))
	}
	if !mask {
		return append(dst, payload...)
	}
	var key [4]byte
	binary.LittleEndian.PutUint32(key[:], rand.Uint32())
	dst = append(dst, key[:]...)
	for i, c := range payload {
		dst = append(dst, c^key[i&3])
	}
	return dst
}
