package domain

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
)

// Registry maps event type names to Go types and converts events to and
// from their stored JSON form. Registration happens once at program start
// (Register panics on a programming error; Add returns the error instead);
// afterwards Encode, Decode and Types are safe for concurrent use.
//
// The zero Registry is not usable; call NewRegistry. There is no global
// registry: each composition root builds its own and passes it on.
type Registry struct {
	mu        sync.RWMutex
	events    map[string]registration
	byType    map[reflect.Type]string
	upcasters map[string]upcaster
}

type registration struct {
	typ  reflect.Type // a struct type implementing Event with value receivers
	new  func() Event
	fast bool // typ implements JSONCodec
}

// JSONCodec is implemented, with value receivers, by event types that are
// encoded or decoded often enough for encoding/json's reflection to show
// (an account create writes and reads several). Registry.Encode and Decode
// use it in place of encoding/json, and fall back to encoding/json whenever
// a method says no, so the stored form and the decoded values stay exactly
// encoding/json's; a fuzz test per type should check that. JSONReader,
// AppendJSONString and AppendJSONTime are the building blocks.
type JSONCodec interface {
	Event
	// AppendJSON appends to dst exactly the bytes json.Marshal writes for
	// the event. ok false (a value it cannot write that way) leaves the
	// event to json.Marshal.
	AppendJSON(dst []byte) (out []byte, ok bool)
	// DecodeJSON returns what json.Unmarshal of data into a copy of the
	// receiver (the registered factory's event) gives, when data is in the
	// form AppendJSON writes or another form it reads exactly as
	// json.Unmarshal does. ok false leaves data to encoding/json, so every
	// other form, and every error, is encoding/json's.
	DecodeJSON(data []byte) (e Event, ok bool)
}

var (
	eventInterface     = reflect.TypeFor[Event]()
	jsonCodecInterface = reflect.TypeFor[JSONCodec]()
)

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{
		events:    make(map[string]registration),
		byType:    make(map[reflect.Type]string),
		upcasters: make(map[string]upcaster),
	}
}

// Register is Add that panics on error. Use it in the init-time wiring where
// a bad registration is a programming error.
func (r *Registry) Register(name string, new func() Event) {
	if err := r.Add(name, new); err != nil {
		panic(err)
	}
}

// Add registers the event type name. new returns the zero event that Decode
// fills in: either a pointer to a fresh struct (func() Event { return
// new(AccountCreated) }) or a struct value; fields it presets act as defaults
// for fields missing from stored data. The struct type must implement Event
// with a value receiver and its EventType must return name.
//
// Add fails, with an *EventError wrapping ErrInvalidEventType,
// ErrInvalidEventFactory, ErrEventTypeMismatch or ErrDuplicateEventType,
// when name is invalid, new is unusable, the names disagree, or name (or the
// Go type) is already registered or is the source of an upcaster.
func (r *Registry) Add(name string, new func() Event) error {
	fail := func(err error) error { return &EventError{Op: "register", EventType: name, Err: err} }
	if err := ValidateEventType(name); err != nil {
		return fail(err)
	}
	typ, err := checkFactory(name, new)
	if err != nil {
		return fail(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.events[name]; ok {
		return fail(ErrDuplicateEventType)
	}
	if other, ok := r.byType[typ]; ok {
		return fail(fmt.Errorf("%w: Go type %s is already registered as %s", ErrDuplicateEventType, typ, other))
	}
	if up, ok := r.upcasters[name]; ok {
		return fail(fmt.Errorf("%w: already upcast to %s", ErrDuplicateEventType, up.to))
	}
	r.events[name] = registration{typ: typ, new: new, fast: typ.Implements(jsonCodecInterface)}
	r.byType[typ] = name
	return nil
}

// checkFactory validates new and returns the struct type it produces.
func checkFactory(name string, new func() Event) (reflect.Type, error) {
	if new == nil {
		return nil, fmt.Errorf("%w: nil factory", ErrInvalidEventFactory)
	}
	e1, e2 := new(), new()
	if e1 == nil || e2 == nil {
		return nil, fmt.Errorf("%w: factory returned nil", ErrInvalidEventFactory)
	}
	v1, v2 := reflect.ValueOf(e1), reflect.ValueOf(e2)
	typ := v1.Type()
	if v2.Type() != typ {
		return nil, fmt.Errorf("%w: factory returned both %s and %s", ErrInvalidEventFactory, typ, v2.Type())
	}
	if typ.Kind() == reflect.Pointer {
		if v1.IsNil() || v2.IsNil() {
			return nil, fmt.Errorf("%w: factory returned a nil %s", ErrInvalidEventFactory, typ)
		}
		typ = typ.Elem()
		if typ.Size() > 0 && v1.Pointer() == v2.Pointer() {
			return nil, fmt.Errorf("%w: factory must return a fresh *%s on every call", ErrInvalidEventFactory, typ)
		}
	}
	if typ.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: %s is not a struct", ErrInvalidEventFactory, typ)
	}
	if !typ.Implements(eventInterface) {
		return nil, fmt.Errorf("%w: %s must implement Event with a value receiver", ErrInvalidEventFactory, typ)
	}
	if got := e1.EventType(); got != name {
		return nil, fmt.Errorf("%w: %s.EventType() returns %q", ErrEventTypeMismatch, typ, got)
	}
	return typ, nil
}

// Types returns the registered event type names, sorted. Upcaster sources
// are not included.
func (r *Registry) Types() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.events))
	for name := range r.events {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Encode returns the event type name and JSON data of e, which may be a
// registered struct value or a non-nil pointer to one. It fails with an
// *EventError wrapping ErrUnknownEventType for an unregistered name,
// ErrEventTypeMismatch when e's Go type is not the one registered under its
// name, and ErrInvalidEventData for nil events or JSON encoding failures.
func (r *Registry) Encode(e Event) (eventType string, data []byte, err error) {
	if e == nil {
		return "", nil, &EventError{Op: "encode", Err: fmt.Errorf("%w: nil event", ErrInvalidEventData)}
	}
	v := reflect.ValueOf(e)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "", nil, &EventError{Op: "encode", Err: fmt.Errorf("%w: nil %s", ErrInvalidEventData, v.Type())}
		}
		v = v.Elem()
	}
	name := e.EventType()
	fail := func(err error) (string, []byte, error) {
		return "", nil, &EventError{Op: "encode", EventType: name, Err: err}
	}
	r.mu.RLock()
	reg, ok := r.events[name]
	r.mu.RUnlock()
	if !ok {
		return fail(ErrUnknownEventType)
	}
	if v.Type() != reg.typ {
		return fail(fmt.Errorf("%w: registered as %s, got %s", ErrEventTypeMismatch, reg.typ, v.Type()))
	}
	data, err = reg.encode(e, v)
	if err != nil {
		return fail(fmt.Errorf("%w: %w", ErrInvalidEventData, err))
	}
	if !isJSONObject(data) {
		return fail(fmt.Errorf("%w: encodes to a JSON value that is not an object", ErrInvalidEventData))
	}
	return name, data, nil
}

// Decode turns stored data of type eventType back into an event value,
// first applying any upcasters from eventType to a registered type (so the
// result's EventType may be newer than eventType). data must be a JSON
// object; unknown fields are ignored. Decode fails with an *EventError
// wrapping ErrUnknownEventType when eventType has no registration and no
// upcaster chain to one, and ErrInvalidEventData when data is not a JSON
// object or does not fit the registered type; an upcaster's own error is
// returned wrapped in an *EventError with Op "upcast".
func (r *Registry) Decode(eventType string, data []byte) (Event, error) {
	reg, chain, err := r.resolve(eventType)
	if err != nil {
		return nil, err
	}
	if !isJSONObject(data) {
		return nil, &EventError{Op: "decode", EventType: eventType, Err: fmt.Errorf("%w: not a JSON object", ErrInvalidEventData)}
	}
	name := eventType
	for _, up := range chain {
		out, err := up.fn(data)
		if err != nil {
			return nil, &EventError{Op: "upcast", EventType: name, Err: fmt.Errorf("to %s: %w", up.to, err)}
		}
		if !isJSONObject(out) {
			return nil, &EventError{Op: "upcast", EventType: name, Err: fmt.Errorf("to %s: %w: result is not a JSON object", up.to, ErrInvalidEventData)}
		}
		data, name = out, up.to
	}
	e, err := reg.decode(data)
	if err != nil {
		if name != eventType {
			err = fmt.Errorf("%w (upcast from %s)", err, eventType)
		}
		return nil, &EventError{Op: "decode", EventType: name, Err: err}
	}
	return e, nil
}

// resolve finds the registration eventType decodes to and the upcasters on
// the way there.
func (r *Registry) resolve(eventType string) (registration, []upcaster, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var chain []upcaster
	for name := eventType; ; {
		if reg, ok := r.events[name]; ok {
			return reg, chain, nil
		}
		up, ok := r.upcasters[name]
		if !ok {
			err := ErrUnknownEventType
			if len(chain) > 0 {
				err = fmt.Errorf("upcast chain ends at %s: %w", name, ErrUnknownEventType)
			}
			return registration{}, nil, &EventError{Op: "decode", EventType: eventType, Err: err}
		}
		if len(chain) >= len(r.upcasters) { // unreachable: AddUpcaster rejects cycles
			return registration{}, nil, &EventError{Op: "decode", EventType: eventType, Err: fmt.Errorf("%w: cycle", ErrInvalidUpcaster)}
		}
		chain = append(chain, up)
		name = up.to
	}
}

// encode marshals e, whose value is v, with its JSONCodec when it has one.
func (reg registration) encode(e Event, v reflect.Value) ([]byte, error) {
	if reg.fast {
		if data, ok := e.(JSONCodec).AppendJSON(nil); ok {
			return data, nil
		}
	}
	return json.Marshal(v.Interface())
}

// decode unmarshals data into a fresh event from the factory, with its
// JSONCodec when it has one.
func (reg registration) decode(data []byte) (Event, error) {
	e := reg.new()
	if reg.fast && reg.made(e) {
		if ev, ok := e.(JSONCodec).DecodeJSON(data); ok {
			return ev, nil
		}
	}
	v := reflect.ValueOf(e)
	var ptr reflect.Value
	switch {
	case e == nil:
		return nil, fmt.Errorf("%w: factory returned nil", ErrInvalidEventFactory)
	case v.Type() == reg.typ:
		ptr = reflect.New(reg.typ)
		ptr.Elem().Set(v)
	case v.Type() == reflect.PointerTo(reg.typ) && !v.IsNil():
		ptr = v
	default:
		return nil, fmt.Errorf("%w: factory returned %s, want %s", ErrInvalidEventFactory, v.Type(), reg.typ)
	}
	if err := json.Unmarshal(data, ptr.Interface()); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidEventData, err)
	}
	ev, ok := ptr.Elem().Interface().(Event)
	if !ok { // unreachable: Add checked that reg.typ implements Event
		return nil, errors.New("decoded value is not an Event")
	}
	return ev, nil
}

// made reports whether the factory's e is a reg.typ or a non-nil pointer
// to one, as decode requires.
func (reg registration) made(e Event) bool {
	v := reflect.ValueOf(e)
	return v.Type() == reg.typ || (v.Kind() == reflect.Pointer && !v.IsNil() && v.Type().Elem() == reg.typ)
}

// isJSONObject reports whether data, after leading JSON whitespace, starts
// an object. Full validity is left to encoding/json.
func isJSONObject(data []byte) bool {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return true
		default:
			return false
		}
	}
	return false
}
