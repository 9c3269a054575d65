package stats

import (
	"bytes"
	"strconv"
	"time"

	"tvsm/domain"
)

// decodeViewing decodes a domain.ViewingReported from exactly the JSON
// that encoding/json writes for one (fields in declaration order, no
// spaces, plain ASCII strings), without reflection. Viewing reports are
// most of a log, and replaying them spent most of its time in
// encoding/json. ok is false for any other input, which the registry then
// decodes: the result is always what the registry would give
// (FuzzDecodeViewing checks that).
func decodeViewing(data []byte) (e domain.ViewingReported, ok bool) {
	c := cursor{b: data, ok: true}
	c.lit(`{"device_id":`)
	e.DeviceID = c.int()
	c.lit(`,"account":`)
	e.Account = c.int()
	c.lit(`,"provider":`)
	e.Provider = c.int()
	c.lit(`,"class":`)
	e.Class = domain.DeviceClass(c.str())
	c.lit(`,"sessions":[`)
	e.Sessions = []domain.ViewingSession{}
	for c.ok && c.peek() != ']' {
		if len(e.Sessions) > 0 {
			c.lit(`,`)
		}
		var s domain.ViewingSession
		c.lit(`{"channel":`)
		s.Channel = c.int()
		c.lit(`,"mode":`)
		s.Mode = domain.ViewingMode(c.str())
		c.lit(`,"start":`)
		s.Start = c.time()
		c.lit(`,"seconds":`)
		s.Seconds = c.int()
		c.lit(`}`)
		e.Sessions = append(e.Sessions, s)
	}
	c.lit(`]}`)
	return e, c.ok && c.i == len(c.b)
}

// cursor reads data left to right; the first mismatch clears ok, after
// which every read returns a zero value.
type cursor struct {
	b  []byte
	i  int
	ok bool
}

func (c *cursor) peek() byte {
	if c.i < len(c.b) {
		return c.b[c.i]
	}
	c.ok = false
	return 0
}

func (c *cursor) lit(s string) {
	if c.ok && bytes.HasPrefix(c.b[c.i:], []byte(s)) {
		c.i += len(s)
		return
	}
	c.ok = false
}

// int reads a JSON integer: -?(0|[1-9][0-9]*) that fits an int64.
func (c *cursor) int() int64 {
	if !c.ok {
		return 0
	}
	start := c.i
	if c.i < len(c.b) && c.b[c.i] == '-' {
		c.i++
	}
	digits := c.i
	for c.i < len(c.b) && c.b[c.i] >= '0' && c.b[c.i] <= '9' {
		c.i++
	}
	if c.i == digits || (c.b[digits] == '0' && c.i > digits+1) {
		c.ok = false
		return 0
	}
	n, err := strconv.ParseInt(string(c.b[start:c.i]), 10, 64)
	c.ok = err == nil
	return n
}

// quoted returns the next string, quotes included, when it holds only
// printable ASCII without escapes (what the registry would read as is).
func (c *cursor) quoted() []byte {
	if !c.ok || c.peek() != '"' {
		c.ok = false
		return nil
	}
	for j := c.i + 1; j < len(c.b); j++ {
		switch ch := c.b[j]; {
		case ch == '"':
			q := c.b[c.i : j+1]
			c.i = j + 1
			return q
		case ch < 0x20 || ch > 0x7e || ch == '\\':
			c.ok = false
			return nil
		}
	}
	c.ok = false
	return nil
}

func (c *cursor) str() string {
	q := c.quoted()
	if len(q) < 2 {
		return ""
	}
	return string(q[1 : len(q)-1])
}

// time reads a time as encoding/json does, through time.Time's own
// UnmarshalJSON.
func (c *cursor) time() time.Time {
	var t time.Time
	if q := c.quoted(); c.ok {
		c.ok = t.UnmarshalJSON(q) == nil
	}
	return t
}
