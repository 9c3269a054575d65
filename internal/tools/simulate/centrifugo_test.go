package simulate

import (
	"encoding/json"
	"testing"
)

// Given a client subscribed to "bench", when Centrifugo's messages arrive
// (a publication as the server writes it, the same in another key order,
// one in another channel, a ping, the replies to connect and subscribe,
// an error), then each is told for what it is.
func TestCentrifugoParser(t *testing.T) {
	p := newCentrifugoParser("bench")
	for _, c := range []struct {
		msg   string
		want  centrifugoKind
		id    uint32
		error bool
	}{
		{`{"push":{"channel":"bench","pub":{"data":{"command":"user_message","text":"hi"}}}}`, centrifugoPublication, 0, false},
		{`{"push":{"pub":{"data":{}},"channel":"bench"}}`, centrifugoPublication, 0, false},
		{`{"push":{"channel":"other","pub":{"data":{}}}}`, centrifugoOther, 0, false},
		{`{"push":{"channel":"bench","join":{"info":{}}}}`, centrifugoOther, 0, false},
		{`{}`, centrifugoPing, 0, false},
		{`{"id":1,"connect":{"client":"c2f1","version":"6.9.1","ping":25,"pong":true}}`, centrifugoReply, 1, false},
		{`{"id":2,"subscribe":{}}`, centrifugoReply, 2, false},
		{`{"id":2,"error":{"code":103,"message":"permission denied"}}`, centrifugoReply, 2, true},
		{`not json`, centrifugoOther, 0, false},
	} {
		kind, m := p.parse([]byte(c.msg))
		if kind != c.want || m.ID != c.id || (m.Error != nil) != c.error {
			t.Errorf("%s: kind %d, id %d, error %v; want %d, %d, %v", c.msg, kind, m.ID, m.Error, c.want, c.id, c.error)
		}
	}
}

// FuzzParseCentrifugo: the hand parse of a publication agrees with
// encoding/json wherever it takes the message.
func FuzzParseCentrifugo(f *testing.F) {
	for _, s := range []string{
		`{"push":{"channel":"bench","pub":{"data":{"command":"user_message","type":"notify","text":"hi","delay":5}}}}`,
		`{"push":{"channel":"bench","pub":{}}}`,
		`{"push":{"channel":"bench","pub":{}},"push":null}`,
		`{"push":{"channel":"bench","pub":null}}`,
		`{"push":{"channel":"bench","pub":{"a":1}}}}`,
		`{"push":{"channel":"other","pub":{}}}`,
		`{"id":2,"subscribe":{}}`,
		`{}`,
	} {
		f.Add([]byte(s))
	}
	p := newCentrifugoParser("bench")
	f.Fuzz(func(t *testing.T, data []byte) {
		kind, _ := p.parse(data)
		var m centrifugoMessage
		if json.Unmarshal(data, &m) != nil {
			if kind == centrifugoPublication {
				t.Fatalf("parse took %q, which encoding/json refuses, for a publication", data)
			}
			return
		}
		decoded := m.Push != nil && m.Push.Channel == "bench" && isObject(m.Push.Pub)
		if (kind == centrifugoPublication) != decoded {
			t.Fatalf("parse(%q): publication %v, encoding/json %v", data, kind == centrifugoPublication, decoded)
		}
	})
}

// Given Centrifugo's clients, no provider is needed, but accounts cannot
// be created for them; holding the devices needs a number of commands to
// hold after; the reader must be one there is.
func TestCentrifugoOptions(t *testing.T) {
	for _, c := range []struct {
		opts Options
		ok   bool
	}{
		{Options{URL: "http://127.0.0.1:8000", Devices: 1, CentrifugoChannel: "bench"}, true},
		{Options{URL: "http://127.0.0.1:8000", Devices: 1, CentrifugoChannel: "bench", StopAfterCommands: 1, Hold: true}, true},
		{Options{URL: "http://127.0.0.1:8000", Devices: 1, CentrifugoChannel: "bench", AdminUser: "admin"}, false},
		{Options{URL: "http://127.0.0.1:8000", Devices: 1, CentrifugoChannel: "bench", Hold: true}, false},
		{Options{URL: "http://127.0.0.1:8000", Devices: 1}, false}, // a tvsm node needs the provider
		{Options{URL: "http://127.0.0.1:8000", Devices: 1, CentrifugoChannel: "bench", Reader: ReaderGoroutine}, true},
		{Options{URL: "http://127.0.0.1:8000", Devices: 1, CentrifugoChannel: "bench", Reader: "select"}, false},
	} {
		if _, err := New(c.opts); (err == nil) != c.ok {
			t.Errorf("%+v: %v", c.opts, err)
		}
	}
}
