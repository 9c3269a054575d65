package simulate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// serverFrame is a frame as a server writes it: unmasked.
func serverFrame(fin bool, op byte, payload []byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	out := []byte{b0}
	switch n := len(payload); {
	case n <= 125:
		out = append(out, byte(n))
	case n <= 0xffff:
		out = append(out, 126)
		out = binary.BigEndian.AppendUint16(out, uint16(n))
	default:
		out = append(out, 127)
		out = binary.BigEndian.AppendUint64(out, uint64(n))
	}
	return append(out, payload...)
}

// decoded is what frameReader made of a stream: each message or control
// frame as "op:payload", and the error that ended it.
func decodeInPieces(stream []byte, piece int) (got []string, err error) {
	var r frameReader
	for len(stream) > 0 {
		n := min(piece, len(stream))
		r.feed(stream[:n])
		stream = stream[n:]
		for {
			op, payload, ok, err := r.next()
			if err != nil {
				return got, err
			}
			if !ok {
				break
			}
			got = append(got, fmt.Sprintf("%d:%s", op, payload))
		}
	}
	return got, nil
}

// Given a server's stream of a text message, a ping, a message in three
// fragments with a ping between them, a binary message of 300 bytes (a
// 16-bit length), one of 70,000 (a 64-bit length) and a close frame,
// when it arrives in pieces of every size from 1 byte to all at once,
// then the same messages and control frames come out, fragments joined.
func TestFrameReaderSplitAndFragmented(t *testing.T) {
	long, longer := strings.Repeat("x", 300), strings.Repeat("y", 70000)
	var stream []byte
	for _, f := range [][]byte{
		serverFrame(true, opText, []byte(`{"type":"command","id":"1.0.1","command":{}}`)),
		serverFrame(true, opPing, []byte("p")),
		serverFrame(false, opText, []byte("ab")),
		serverFrame(false, opContinuation, []byte("cd")),
		serverFrame(true, opPing, nil),
		serverFrame(true, opContinuation, []byte("ef")),
		serverFrame(true, opBinary, []byte(long)),
		serverFrame(true, opText, []byte(longer)),
		serverFrame(true, opClose, append(binary.BigEndian.AppendUint16(nil, 4003), "bye"...)),
	} {
		stream = append(stream, f...)
	}
	want := []string{`1:{"type":"command","id":"1.0.1","command":{}}`, "9:p", "9:", "1:abcdef", "2:" + long, "1:" + longer,
		"8:" + string(binary.BigEndian.AppendUint16(nil, 4003)) + "bye"}
	for _, piece := range []int{1, 2, 3, 5, 7, 64, 511, 512, 513, 4096, len(stream)} {
		got, err := decodeInPieces(stream, piece)
		if err != nil {
			t.Fatalf("pieces of %d: %v", piece, err)
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("pieces of %d: got %d frames %.200q; want %.200q", piece, len(got), got, want)
		}
	}
	var ce *closeError
	if err := closeFrameError([]byte(want[len(want)-1][2:])); !errors.As(err, &ce) || ce.code != 4003 || ce.reason != "bye" {
		t.Fatalf("close frame read as %v", err)
	}
	if err := closeFrameError(nil); !errors.As(err, &ce) || ce.code != 1005 {
		t.Fatalf("empty close frame read as %v", err)
	}
}

// Given frames a server must not send, when they arrive, then the reader
// refuses them rather than guessing.
func TestFrameReaderRefusesBadFrames(t *testing.T) {
	masked := serverFrame(true, opText, []byte("hi"))
	masked[1] |= 0x80
	masked = append(masked[:2], append([]byte{1, 2, 3, 4}, masked[2:]...)...)
	reserved := serverFrame(true, opText, []byte("hi"))
	reserved[0] |= 0x40
	tooBig := append([]byte{0x81, 127}, binary.BigEndian.AppendUint64(nil, maxMessage+1)...)
	for name, stream := range map[string][]byte{
		"masked":                       masked,
		"reserved bits":                reserved,
		"unknown opcode":               serverFrame(true, 0x3, nil),
		"continuation with no message": serverFrame(true, opContinuation, []byte("x")),
		"fragmented ping":              serverFrame(false, opPing, nil),
		"ping over 125 bytes":          serverFrame(true, opPing, bytes.Repeat([]byte("p"), 126)),
		"message inside a message":     append(serverFrame(false, opText, []byte("a")), serverFrame(true, opText, []byte("b"))...),
		"frame over the limit":         tooBig,
		"message over the limit": append(serverFrame(false, opText, bytes.Repeat([]byte("a"), maxMessage/2+1)),
			serverFrame(true, opContinuation, bytes.Repeat([]byte("b"), maxMessage/2+1))...),
	} {
		if got, err := decodeInPieces(stream, len(stream)); !errors.Is(err, errFrame) {
			t.Errorf("%s: got %q, error %v", name, got, err)
		}
	}
}

// Given a client frame as appendClientFrame writes it, when unmasked, then
// it holds the payload, with the length in the form its size asks for.
func TestClientFrameIsMasked(t *testing.T) {
	for _, n := range []int{0, 125, 126, 0xffff, 0x10000} {
		payload := bytes.Repeat([]byte("z"), n)
		f := appendClientFrame(nil, opText, payload)
		if f[0] != 0x81 || f[1]&0x80 == 0 {
			t.Fatalf("%d bytes: head %x", n, f[:2])
		}
		head, size := 2, int(f[1]&0x7f)
		switch size {
		case 126:
			head, size = 4, int(binary.BigEndian.Uint16(f[2:]))
		case 127:
			head, size = 10, int(binary.BigEndian.Uint64(f[2:]))
		}
		key, body := f[head:head+4], f[head+4:]
		if size != n || len(body) != n {
			t.Fatalf("%d bytes: length %d, body %d", n, size, len(body))
		}
		for i := range body {
			body[i] ^= key[i&3]
		}
		if !bytes.Equal(body, payload) {
			t.Fatalf("%d bytes: unmasked payload differs", n)
		}
	}
}

// FuzzFrameReader: whatever a server sends, in whatever pieces, the reader
// neither panics nor depends on how the bytes were split: one byte at a
// time and all at once give the same frames, and the same error or none.
func FuzzFrameReader(f *testing.F) {
	f.Add(serverFrame(true, opText, []byte(`{"type":"command","id":"1","command":{}}`)), uint8(3))
	f.Add(append(serverFrame(false, opText, []byte("ab")), serverFrame(true, opContinuation, []byte("cd"))...), uint8(1))
	f.Add(append(serverFrame(true, opPing, []byte("p")), serverFrame(true, opClose, []byte{0x0f, 0xa3})...), uint8(2))
	f.Add(serverFrame(true, opBinary, bytes.Repeat([]byte("b"), 200)), uint8(17))
	f.Add([]byte{0x81, 127, 0, 0, 0, 0, 0, 0, 1, 0}, uint8(4))
	f.Fuzz(func(t *testing.T, stream []byte, piece uint8) {
		whole, wholeErr := decodeInPieces(stream, len(stream)+1)
		split, splitErr := decodeInPieces(stream, int(piece)%16+1)
		if (wholeErr == nil) != (splitErr == nil) || strings.Join(whole, "|") != strings.Join(split, "|") {
			t.Fatalf("all at once: %q, %v; in pieces of %d: %q, %v", whole, wholeErr, int(piece)%16+1, split, splitErr)
		}
		for _, m := range whole {
			if len(m) > maxMessage+4 {
				t.Fatalf("a message of %d bytes passed the limit", len(m))
			}
		}
	})
}
