package wsframe

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// testLimit is the message limit of the tests' decoders.
const testLimit = 1 << 20

// frameOf is a frame as a peer writes it: masked (a client's) or not (a
// server's), final or not.
func frameOf(fin bool, op byte, payload []byte, mask bool) []byte {
	out := AppendFrame(nil, op, payload, mask)
	if !fin {
		out[0] &^= 0x80
	}
	return out
}

// decodeInPieces decodes stream arriving in pieces of piece bytes: each
// message or control frame as "op:payload", and the error that ended it.
// With scratch set, every piece is read into one shared buffer, as the
// gateway's poller does, and the decoder keeps only what is left over.
func decodeInPieces(stream []byte, piece int, masked, scratch bool) (got []string, err error) {
	d := Decoder{Masked: masked, Limit: testLimit}
	shared := make([]byte, 4096)
	for len(stream) > 0 {
		var room []byte
		if scratch {
			room = d.Space(shared)
		} else {
			room = d.Space(nil)
		}
		n := copy(room, stream[:min(piece, len(stream))])
		d.Filled(n)
		stream = stream[n:]
		for {
			op, payload, ok, err := d.Next()
			if err != nil {
				return got, err
			}
			if !ok {
				break
			}
			got = append(got, fmt.Sprintf("%d:%s", op, payload))
		}
		if scratch {
			d.Keep()
			clear(shared) // what the decoder kept must not live there
		}
	}
	return got, nil
}

// Given a stream of a text message, a ping, a message in three fragments
// with a ping between them, a binary message of 300 bytes (a 16-bit
// length), one of 70,000 (a 64-bit length) and a close frame, from a
// server (unmasked) or a client (masked), when it arrives in pieces of
// every size from 1 byte to all at once, read into the decoder's own
// buffer or a shared one, then the same messages and control frames come
// out, fragments joined and payloads unmasked.
func TestDecoderSplitAndFragmented(t *testing.T) {
	long, longer := strings.Repeat("x", 300), strings.Repeat("y", 70000)
	closeBody := append(binary.BigEndian.AppendUint16(nil, 4003), "bye"...)
	want := []string{`1:{"type":"command","id":"1.0.1","command":{}}`, "9:p", "9:", "1:abcdef", "2:" + long, "1:" + longer,
		"8:" + string(closeBody)}
	for _, masked := range []bool{false, true} {
		var stream []byte
		for _, f := range [][]byte{
			frameOf(true, OpText, []byte(`{"type":"command","id":"1.0.1","command":{}}`), masked),
			frameOf(true, OpPing, []byte("p"), masked),
			frameOf(false, OpText, []byte("ab"), masked),
			frameOf(false, OpContinuation, []byte("cd"), masked),
			frameOf(true, OpPing, nil, masked),
			frameOf(true, OpContinuation, []byte("ef"), masked),
			frameOf(true, OpBinary, []byte(long), masked),
			frameOf(true, OpText, []byte(longer), masked),
			frameOf(true, OpClose, closeBody, masked),
		} {
			stream = append(stream, f...)
		}
		for _, scratch := range []bool{false, true} {
			for _, piece := range []int{1, 2, 3, 5, 7, 64, 511, 512, 513, 4096, len(stream)} {
				got, err := decodeInPieces(stream, piece, masked, scratch)
				if err != nil {
					t.Fatalf("masked %t, scratch %t, pieces of %d: %v", masked, scratch, piece, err)
				}
				if strings.Join(got, "|") != strings.Join(want, "|") {
					t.Fatalf("masked %t, scratch %t, pieces of %d: got %d frames %.200q; want %.200q",
						masked, scratch, piece, len(got), got, want)
				}
			}
		}
	}
	if code, reason := CloseFrame(closeBody); code != 4003 || reason != "bye" {
		t.Fatalf("close frame read as %d %q", code, reason)
	}
	if code, _ := CloseFrame(nil); code != CloseNoStatusReceived {
		t.Fatalf("empty close frame read as %d", code)
	}
}

// Given frames the peer must not send, when they arrive, then the decoder
// refuses them rather than guessing, with the close code to answer: 1009
// for a message over the limit, 1002 for the rest.
func TestDecoderRefusesBadFrames(t *testing.T) {
	for _, masked := range []bool{false, true} {
		wrongMask := frameOf(true, OpText, []byte("hi"), !masked)
		reserved := frameOf(true, OpText, []byte("hi"), masked)
		reserved[0] |= 0x40
		tooBig := frameOf(true, OpText, nil, masked)
		tooBig = append([]byte{0x81, 0x7f | tooBig[1]&0x80}, binary.BigEndian.AppendUint64(nil, testLimit+1)...)
		for name, c := range map[string]struct {
			stream []byte
			code   int
		}{
			"wrong mask":                   {wrongMask, CloseProtocolError},
			"reserved bits":                {reserved, CloseProtocolError},
			"unknown opcode":               {frameOf(true, 0x3, nil, masked), CloseProtocolError},
			"continuation with no message": {frameOf(true, OpContinuation, []byte("x"), masked), CloseProtocolError},
			"fragmented ping":              {frameOf(false, OpPing, nil, masked), CloseProtocolError},
			"ping over 125 bytes":          {frameOf(true, OpPing, bytes.Repeat([]byte("p"), 126), masked), CloseProtocolError},
			"message inside a message": {append(frameOf(false, OpText, []byte("a"), masked),
				frameOf(true, OpText, []byte("b"), masked)...), CloseProtocolError},
			"close of one byte":      {frameOf(true, OpClose, []byte{3}, masked), CloseProtocolError},
			"close code 1005":        {frameOf(true, OpClose, []byte{0x03, 0xed}, masked), CloseProtocolError},
			"close code 999":         {frameOf(true, OpClose, []byte{0x03, 0xe7}, masked), CloseProtocolError},
			"close reason not UTF-8": {frameOf(true, OpClose, []byte{0x03, 0xe8, 0xff}, masked), CloseProtocolError},
			"frame over the limit":   {tooBig, CloseMessageTooBig},
			"message over the limit": {append(frameOf(false, OpText, bytes.Repeat([]byte("a"), testLimit/2+1), masked),
				frameOf(true, OpContinuation, bytes.Repeat([]byte("b"), testLimit/2+1), masked)...), CloseMessageTooBig},
		} {
			got, err := decodeInPieces(c.stream, len(c.stream), masked, false)
			var fe *Error
			if !errors.As(err, &fe) || fe.Code != c.code {
				t.Errorf("masked %t, %s: got %q, error %v; want close %d", masked, name, got, err, c.code)
			}
		}
	}
}

// Given a frame as AppendFrame writes it, masked or not, when its head is
// read, then the length takes the form its size asks for and the payload
// comes back unmasked.
func TestAppendFrameLengthsAndMask(t *testing.T) {
	for _, masked := range []bool{false, true} {
		for _, n := range []int{0, 125, 126, 0xffff, 0x10000} {
			payload := bytes.Repeat([]byte("z"), n)
			f := AppendFrame(nil, OpText, payload, masked)
			if f[0] != 0x81 || (f[1]&0x80 != 0) != masked {
				t.Fatalf("masked %t, %d bytes: head %x", masked, n, f[:2])
			}
			size := int(f[1] & 0x7f)
			switch size {
			case 126:
				size = int(binary.BigEndian.Uint16(f[2:]))
			case 127:
				size = int(binary.BigEndian.Uint64(f[2:]))
			}
			if size != n {
				t.Fatalf("masked %t, %d bytes: length %d", masked, n, size)
			}
			got, err := decodeInPieces(f, len(f), masked, false)
			if err != nil || len(got) != 1 || got[0] != "1:"+string(payload) {
				t.Fatalf("masked %t, %d bytes: decoded %d frames, %v", masked, n, len(got), err)
			}
		}
	}
}

// Given a shared buffer, when a whole frame is read into it, then the
// decoder keeps no memory after Keep; when half a frame is, it keeps only
// that half, and reads the rest into its own buffer.
func TestDecoderKeepsOnlyWhatIsLeftOver(t *testing.T) {
	shared := make([]byte, 4096)
	f := frameOf(true, OpText, []byte(`{"type":"ack","id":"1.0.1"}`), true)
	d := Decoder{Masked: true, Limit: testLimit}
	d.Filled(copy(d.Space(shared), f))
	if op, payload, ok, err := d.Next(); !ok || err != nil || op != OpText || string(payload) != `{"type":"ack","id":"1.0.1"}` {
		t.Fatalf("got %d %q %t %v", op, payload, ok, err)
	}
	d.Keep()
	if d.buf != nil || d.Buffered() != 0 {
		t.Fatalf("after a whole frame the decoder holds %d bytes (capacity %d)", d.Buffered(), cap(d.buf))
	}
	d.Filled(copy(d.Space(shared), f[:7]))
	if _, _, ok, err := d.Next(); ok || err != nil {
		t.Fatalf("half a frame decoded: %t %v", ok, err)
	}
	d.Keep()
	if d.Buffered() != 7 || &d.buf[:1][0] == &shared[0] {
		t.Fatalf("kept %d bytes, in the shared buffer: %t", d.Buffered(), &d.buf[:1][0] == &shared[0])
	}
	clear(shared)
	d.Filled(copy(d.Space(shared), f[7:]))
	if _, payload, ok, err := d.Next(); !ok || err != nil || string(payload) != `{"type":"ack","id":"1.0.1"}` {
		t.Fatalf("the rest gave %q %t %v", payload, ok, err)
	}
}

// FuzzDecoder: whatever a peer sends, in whatever pieces, the decoder
// neither panics nor depends on how the bytes were split or where they
// were read: one piece at a time and all at once, into its own buffer or a
// shared one, give the same frames, and the same error or none.
func FuzzDecoder(f *testing.F) {
	for _, masked := range []bool{false, true} {
		f.Add(frameOf(true, OpText, []byte(`{"type":"command","id":"1","command":{}}`), masked), uint8(3), masked)
		f.Add(append(frameOf(false, OpText, []byte("ab"), masked), frameOf(true, OpContinuation, []byte("cd"), masked)...), uint8(1), masked)
		f.Add(append(frameOf(true, OpPing, []byte("p"), masked), frameOf(true, OpClose, []byte{0x0f, 0xa3}, masked)...), uint8(2), masked)
		f.Add(frameOf(true, OpBinary, bytes.Repeat([]byte("b"), 200), masked), uint8(17), masked)
	}
	f.Add([]byte{0x81, 127, 0, 0, 0, 0, 0, 0, 1, 0}, uint8(4), false)
	f.Fuzz(func(t *testing.T, stream []byte, piece uint8, masked bool) {
		size := int(piece)%16 + 1
		whole, wholeErr := decodeInPieces(stream, len(stream)+1, masked, false)
		for _, scratch := range []bool{false, true} {
			split, splitErr := decodeInPieces(stream, size, masked, scratch)
			if (wholeErr == nil) != (splitErr == nil) || strings.Join(whole, "|") != strings.Join(split, "|") {
				t.Fatalf("all at once: %q, %v; in pieces of %d (shared buffer %t): %q, %v", whole, wholeErr, size, scratch, split, splitErr)
			}
		}
		for _, m := range whole {
			if len(m) > testLimit+4 {
				t.Fatalf("a message of %d bytes passed the limit", len(m))
			}
		}
	})
}
