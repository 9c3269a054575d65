package domain

import (
	"slices"
	"strconv"
)

// Hand-written JSON of ViewingReported (see JSONCodec): viewing reports are
// most of a log, and replaying them spent most of its time in encoding/json.
// FuzzViewingReportedJSON and FuzzDecodeViewingReported check it against
// encoding/json.

// viewingSessionJSONSize is room for one session's keys, numbers and time.
const viewingSessionJSONSize = 120

// AppendJSON implements JSONCodec.
func (e ViewingReported) AppendJSON(dst []byte) ([]byte, bool) {
	dst = slices.Grow(dst, 100+len(e.Class)+len(e.Sessions)*viewingSessionJSONSize)
	dst = strconv.AppendInt(append(dst, `{"device_id":`...), e.DeviceID, 10)
	dst = strconv.AppendInt(append(dst, `,"account":`...), e.Account, 10)
	dst = strconv.AppendInt(append(dst, `,"provider":`...), e.Provider, 10)
	dst = AppendJSONString(append(dst, `,"class":`...), string(e.Class))
	if e.Sessions == nil {
		return append(dst, `,"sessions":null}`...), true
	}
	dst = append(dst, `,"sessions":[`...)
	for i, s := range e.Sessions {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(append(dst, `{"channel":`...), s.Channel, 10)
		dst = AppendJSONString(append(dst, `,"mode":`...), string(s.Mode))
		var ok bool
		if dst, ok = AppendJSONTime(append(dst, `,"start":`...), s.Start); !ok {
			return dst, false
		}
		dst = strconv.AppendInt(append(dst, `,"seconds":`...), s.Seconds, 10)
		dst = append(dst, '}')
	}
	return append(dst, "]}"...), true
}

// DecodeJSON implements JSONCodec.
func (e ViewingReported) DecodeJSON(data []byte) (Event, bool) {
	r := NewJSONReader(data)
	r.Expect(`{"device_id":`)
	e.DeviceID = r.Int64()
	r.Expect(`,"account":`)
	e.Account = r.Int64()
	r.Expect(`,"provider":`)
	e.Provider = r.Int64()
	r.Expect(`,"class":`)
	e.Class = DeviceClass(r.Str())
	r.Expect(`,"sessions":`)
	if r.Null() {
		e.Sessions = nil
	} else {
		r.Expect(`[`)
		e.Sessions = []ViewingSession{}
		for first := true; !r.Failed() && !r.Next(`]`); first = false {
			if !first {
				r.Expect(`,`)
			}
			var s ViewingSession
			r.Expect(`{"channel":`)
			s.Channel = r.Int64()
			r.Expect(`,"mode":`)
			s.Mode = ViewingMode(r.Str())
			r.Expect(`,"start":`)
			s.Start = r.Time()
			r.Expect(`,"seconds":`)
			s.Seconds = r.Int64()
			r.Expect(`}`)
			e.Sessions = append(e.Sessions, s)
		}
	}
	r.Expect(`}`)
	return e, r.OK()
}
