package simulate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
)

// The websocket frames of RFC 6455 (https://www.rfc-editor.org/rfc/rfc6455#section-5)
// as a client sees them, for the reader that takes sockets from the Go
// runtime: the server's frames arrive unmasked, the client's go masked.

// Opcodes.
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xa
)

// maxMessage bounds a message (all its fragments): a server's commands are
// a few hundred bytes.
const maxMessage = 1 << 20

// minReadSpace is the free room a read asks for at least.
const minReadSpace = 512

// closeError is a close frame from the server.
type closeError struct {
	code   int // 1005 (none given) when the frame has no body
	reason string
}

func (e *closeError) Error() string {
	return fmt.Sprintf("websocket: close %d %s", e.code, e.reason)
}

// errFrame is a frame a server must not send.
var errFrame = errors.New("websocket: bad frame")

// frameReader decodes the frames a server sends from bytes as they arrive,
// in any pieces: a frame split over reads waits for its rest; the
// fragments of a message are joined.
type frameReader struct {
	buf        []byte // received: buf[start:] is not decoded yet
	start      int
	need       int    // bytes the frame at start needs in all, when its header is in
	msg        []byte // a fragmented message so far
	msgOp      byte
	fragmented bool
}

// space returns room to read into at the end of the buffer (after moving
// what is not decoded yet to its start); filled takes what was read there.
func (r *frameReader) space() []byte {
	if r.start == len(r.buf) {
		r.buf, r.start = r.buf[:0], 0
	}
	want := max(minReadSpace, r.need-(len(r.buf)-r.start))
	if cap(r.buf)-len(r.buf) < want {
		if r.start > 0 {
			n := copy(r.buf, r.buf[r.start:])
			r.buf, r.start = r.buf[:n], 0
		}
		if cap(r.buf)-len(r.buf) < want {
			grown := make([]byte, len(r.buf), max(len(r.buf)+want, 2*cap(r.buf)))
			copy(grown, r.buf)
			r.buf = grown
		}
	}
	return r.buf[len(r.buf):cap(r.buf)]
}

// reserve makes the room of a read now: a connection's first message then
// allocates nothing (in a broadcast every message is a connection's first).
func (r *frameReader) reserve() { r.space() }

// filled takes n bytes read into the slice space returned.
func (r *frameReader) filled(n int) { r.buf = r.buf[:len(r.buf)+n] }

// feed appends data (for bytes read elsewhere, and tests).
func (r *frameReader) feed(data []byte) {
	for len(data) > 0 {
		n := copy(r.space(), data)
		r.filled(n)
		data = data[n:]
	}
}

// next returns the next whole message (opText or opBinary, its fragments
// joined) or control frame (opClose, opPing, opPong) and its payload,
// valid until the next call of space or feed; ok is false until more bytes
// are in. An error is a frame a server must not send: the connection is
// done.
func (r *frameReader) next() (op byte, payload []byte, ok bool, err error) {
	for {
		fin, op, payload, ok, err := r.frame()
		if !ok || err != nil {
			return 0, nil, false, err
		}
		switch {
		case op >= opClose:
			return op, payload, true, nil
		case op == opContinuation:
			if !r.fragmented {
				return 0, nil, false, fmt.Errorf("%w: continuation with no message begun", errFrame)
			}
			if len(r.msg)+len(payload) > maxMessage {
				return 0, nil, false, fmt.Errorf("%w: message over %d bytes", errFrame, maxMessage)
			}
			r.msg = append(r.msg, payload...)
			if fin {
				r.fragmented = false
				return r.msgOp, r.msg, true, nil
			}
		default: // text or binary
			if r.fragmented {
				return 0, nil, false, fmt.Errorf("%w: new message inside a fragmented one", errFrame)
			}
			if fin {
				return op, payload, true, nil
			}
			r.fragmented, r.msgOp = true, op
			r.msg = append(r.msg[:0], payload...)
		}
	}
}

// frame decodes the frame at start, if it is all in.
func (r *frameReader) frame() (fin bool, op byte, payload []byte, ok bool, err error) {
	b := r.buf[r.start:]
	if len(b) < 2 {
		return false, 0, nil, false, nil
	}
	fin, op = b[0]&0x80 != 0, b[0]&0x0f
	if b[0]&0x70 != 0 {
		return false, 0, nil, false, fmt.Errorf("%w: reserved bits set (no extension was agreed)", errFrame)
	}
	if b[1]&0x80 != 0 {
		return false, 0, nil, false, fmt.Errorf("%w: masked frame from the server", errFrame)
	}
	switch op {
	case opContinuation, opText, opBinary:
	case opClose, opPing, opPong:
		if !fin || b[1]&0x7f > 125 {
			return false, 0, nil, false, fmt.Errorf("%w: control frame fragmented or over 125 bytes", errFrame)
		}
	default:
		return false, 0, nil, false, fmt.Errorf("%w: opcode %d", errFrame, op)
	}
	head, size := 2, uint64(b[1]&0x7f)
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
	if size > maxMessage {
		return false, 0, nil, false, fmt.Errorf("%w: frame over %d bytes", errFrame, maxMessage)
	}
	r.need = head + int(size)
	if len(b) < r.need {
		return false, 0, nil, false, nil
	}
	payload = b[head:r.need]
	r.start += r.need
	r.need = 0
	return fin, op, payload, true, nil
}

// closeFrameError reads a close frame's payload.
func closeFrameError(payload []byte) error {
	if len(payload) < 2 {
		return &closeError{code: 1005}
	}
	return &closeError{code: int(binary.BigEndian.Uint16(payload)), reason: string(payload[2:])}
}

// maxClientHead is the longest head of a client's frame: two bytes, a
// length of eight and a mask of four.
const maxClientHead = 14

// appendClientFrame appends a final frame of op carrying payload, masked
// as a client's must be.
func appendClientFrame(dst []byte, op byte, payload []byte) []byte {
	dst = slices.Grow(dst, maxClientHead+len(payload))
	dst = append(dst, 0x80|op)
	switch n := len(payload); {
	case n <= 125:
		dst = append(dst, 0x80|byte(n))
	case n <= 0xffff:
		dst = append(dst, 0x80|126)
		dst = binary.BigEndian.AppendUint16(dst, uint16(n))
	default:
		dst = append(dst, 0x80|127)
		dst = binary.BigEndian.AppendUint64(dst, uint64(n))
	}
	var key [4]byte
	binary.LittleEndian.PutUint32(key[:], rand.Uint32())
	dst = append(dst, key[:]...)
	for i, c := range payload {
		dst = append(dst, c^key[i&3])
	}
	return dst
}
