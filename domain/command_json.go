package domain

import (
	"bytes"
	"slices"
	"strconv"
)

// Hand-written JSON of the delivery events (see JSONCodec): a broadcast's
// claims and receipts list every device that got it, a thousand ids an
// event, and every node of a cluster decodes the claims of the others
// before it claims its own devices. FuzzCommandsSentJSON and
// FuzzDecodeDeliveryEvents check them against encoding/json.

// appendDeviceList appends ids as json.Marshal writes an []int64: null
// when nil.
func appendDeviceList(dst []byte, ids []int64) []byte {
	if ids == nil {
		return append(dst, "null"...)
	}
	dst = slices.Grow(dst, 2+len(ids)*10) // ids below 2^30 take at most 10 bytes with their comma
	dst = append(dst, '[')
	for i, id := range ids {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, id, 10)
	}
	return append(dst, ']')
}

// deviceList reads what appendDeviceList writes.
func (r *JSONReader) deviceList() []int64 {
	if r.Null() {
		return nil
	}
	r.Expect(`[`)
	if r.Failed() {
		return nil
	}
	// At most one id per comma left, and one more: the list's room at once.
	ids := make([]int64, 0, bytes.Count(r.data[r.i:], []byte{','})+1)
	for first := true; !r.Failed() && !r.Next(`]`); first = false {
		if !first {
			r.Expect(`,`)
		}
		ids = append(ids, r.Int64())
	}
	return ids
}

// appendSendIndex appends the keys every delivery event begins with.
func appendSendIndex(dst []byte, send int64, index int) []byte {
	dst = strconv.AppendInt(append(dst, `{"send_id":`...), send, 10)
	return strconv.AppendInt(append(dst, `,"index":`...), int64(index), 10)
}

// sendIndex reads what appendSendIndex writes.
func (r *JSONReader) sendIndex() (int64, int) {
	r.Expect(`{"send_id":`)
	send := r.Int64()
	r.Expect(`,"index":`)
	return send, r.Int()
}

// AppendJSON implements JSONCodec.
func (e CommandsSent) AppendJSON(dst []byte) ([]byte, bool) {
	dst = appendDeviceList(append(appendSendIndex(dst, e.SendID, e.Index), `,"devices":`...), e.Devices)
	if e.Node != "" {
		dst = AppendJSONString(append(dst, `,"node":`...), e.Node)
	}
	if e.Late {
		dst = append(dst, `,"late":true`...)
	}
	return append(dst, '}'), true
}

// DecodeJSON implements JSONCodec.
func (e CommandsSent) DecodeJSON(data []byte) (Event, bool) {
	r := NewJSONReader(data)
	e.SendID, e.Index = r.sendIndex()
	r.Expect(`,"devices":`)
	e.Devices = r.deviceList()
	if r.Next(`,"node":`) {
		e.Node = r.Str()
	}
	if r.Next(`,"late":`) {
		e.Late = r.Bool()
	}
	r.Expect(`}`)
	return e, r.OK()
}

// AppendJSON implements JSONCodec.
func (e CommandsAcked) AppendJSON(dst []byte) ([]byte, bool) {
	return appendReceipts(dst, e.SendID, e.Index, e.Devices), true
}

// DecodeJSON implements JSONCodec.
func (e CommandsAcked) DecodeJSON(data []byte) (Event, bool) {
	var ok bool
	e.SendID, e.Index, e.Devices, ok = decodeReceipts(data)
	return e, ok
}

// AppendJSON implements JSONCodec.
func (e CommandsConfirmed) AppendJSON(dst []byte) ([]byte, bool) {
	return appendReceipts(dst, e.SendID, e.Index, e.Devices), true
}

// DecodeJSON implements JSONCodec.
func (e CommandsConfirmed) DecodeJSON(data []byte) (Event, bool) {
	var ok bool
	e.SendID, e.Index, e.Devices, ok = decodeReceipts(data)
	return e, ok
}

// appendReceipts appends CommandsAcked or CommandsConfirmed, alike but
// for their type.
func appendReceipts(dst []byte, send int64, index int, devices []int64) []byte {
	return append(appendDeviceList(append(appendSendIndex(dst, send, index), `,"devices":`...), devices), '}')
}

// decodeReceipts reads what appendReceipts writes.
func decodeReceipts(data []byte) (send int64, index int, devices []int64, ok bool) {
	r := NewJSONReader(data)
	send, index = r.sendIndex()
	r.Expect(`,"devices":`)
	devices = r.deviceList()
	r.Expect(`}`)
	return send, index, devices, r.OK()
}
