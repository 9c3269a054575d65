package domain_test

import (
	"strconv"
	"testing"

	"tvsm/domain"
)

// codecEvent has a JSONCodec that marks its work, so the tests can see
// when the registry uses it and when it falls back to encoding/json (a real
// codec must not differ from encoding/json like this).
type codecEvent struct {
	N   int    `json:"n"`
	Via string `json:"-"`
}

func (codecEvent) EventType() string { return "CodecEvent.v1" }

// AppendJSON writes {"n":N,"codec":true}, and declines negative N.
func (e codecEvent) AppendJSON(dst []byte) ([]byte, bool) {
	if e.N < 0 {
		return dst, false
	}
	return append(strconv.AppendInt(append(dst, `{"n":`...), int64(e.N), 10), `,"codec":true}`...), true
}

// DecodeJSON reads {"n":N} or {} and sets Via; it declines anything else.
func (e codecEvent) DecodeJSON(data []byte) (domain.Event, bool) {
	r := domain.NewJSONReader(data)
	r.Expect(`{`)
	if r.Next(`"n":`) {
		e.N = r.Int()
	}
	r.Expect(`}`)
	e.Via = "codec"
	return e, r.OK()
}

func codecRegistry(factory func() domain.Event) *domain.Registry {
	r := domain.NewRegistry()
	r.Register("CodecEvent.v1", factory)
	r.RegisterUpcaster("CodecNumbered.v1", "CodecEvent.v1", func([]byte) ([]byte, error) { return []byte(`{"n":5}`), nil })
	return r
}

func TestRegistryEncodesWithJSONCodec(t *testing.T) {
	r := codecRegistry(func() domain.Event { return new(codecEvent) })
	for _, tt := range []struct {
		e    domain.Event
		want string
	}{
		{codecEvent{N: 1}, `{"n":1,"codec":true}`},
		{&codecEvent{N: 2}, `{"n":2,"codec":true}`},
		{codecEvent{N: -1}, `{"n":-1}`}, // declined: encoding/json
	} {
		if _, data, err := r.Encode(tt.e); err != nil || string(data) != tt.want {
			t.Errorf("Encode(%#v) = %s, %v; want %s", tt.e, data, err, tt.want)
		}
	}
}

func TestRegistryDecodesWithJSONCodec(t *testing.T) {
	for name, factory := range map[string]func() domain.Event{
		"pointer factory": func() domain.Event { return &codecEvent{N: 7} },
		"value factory":   func() domain.Event { return codecEvent{N: 7} },
	} {
		r := codecRegistry(factory)
		for _, tt := range []struct {
			typ, data string
			want      codecEvent
		}{
			{"CodecEvent.v1", `{"n":1}`, codecEvent{N: 1, Via: "codec"}},
			{"CodecEvent.v1", `{}`, codecEvent{N: 7, Via: "codec"}},         // starts from the factory's event
			{"CodecEvent.v1", `{"n": 1}`, codecEvent{N: 1}},                 // declined: encoding/json
			{"CodecEvent.v1", `{"x":1}`, codecEvent{N: 7}},                  // declined, factory default kept
			{"CodecNumbered.v1", `{"m":1}`, codecEvent{N: 5, Via: "codec"}}, // upcast data takes the same path
		} {
			got, err := r.Decode(tt.typ, []byte(tt.data))
			if err != nil || got != tt.want {
				t.Errorf("%s: Decode(%s, %s) = %#v, %v; want %#v", name, tt.typ, tt.data, got, err, tt.want)
			}
		}
		if _, err := r.Decode("CodecEvent.v1", []byte(`{"n":"x"}`)); err == nil {
			t.Errorf("%s: Decode of a bad value succeeded", name)
		}
	}
}
