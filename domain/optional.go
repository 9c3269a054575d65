package domain

import (
	"bytes"
	"encoding/json"
)

// Optional is one field of a partial update, in one of three states:
//
//	absent   Present == false      leave the field as it is
//	null     Present && Null       clear it (nullable fields)
//	a value  Present && !Null      set it to Value
//
// The zero Optional is absent. Update commands use it for every field, and
// so do Updated events, which carry only the fields that changed. Build
// values with Some and Null; a Value beside Null is ignored.
//
// The struct has the same fields, in the same order, as the HTTP decoder's
// wire.Optional, so either converts to the other with a plain conversion:
// domain.Optional[string](obj.String("login")).
//
// In JSON, a struct field of type Optional[T] decodes as absent when its key
// is missing, null for a JSON null and a value otherwise. Encoding writes
// null or the value; tag the field `json:",omitzero"` so absent fields are
// left out.
type Optional[T any] struct {
	Present bool
	Null    bool
	Value   T
}

// Some returns an Optional holding v.
func Some[T any](v T) Optional[T] { return Optional[T]{Present: true, Value: v} }

// Null returns an Optional that clears its field.
func Null[T any]() Optional[T] { return Optional[T]{Present: true, Null: true} }

// FromPtr returns Some(*p), or Null when p is nil: the form of a nullable
// field that is set, to a value or to null.
func FromPtr[T any](p *T) Optional[T] {
	if p == nil {
		return Null[T]()
	}
	return Some(*p)
}

// HasValue reports whether the update sets the field to a value.
func (o Optional[T]) HasValue() bool { return o.Present && !o.Null }

// IsNull reports whether the update sets the field to null.
func (o Optional[T]) IsNull() bool { return o.Present && o.Null }

// IsZero reports whether the field is absent; it makes `json:",omitzero"`
// leave absent fields out.
func (o Optional[T]) IsZero() bool { return !o.Present }

// Get returns the value and true when the update sets one; for absent and
// null it returns the zero T and false.
func (o Optional[T]) Get() (T, bool) {
	if !o.HasValue() {
		var zero T
		return zero, false
	}
	return o.Value, true
}

// Or returns the value, or def when the update sets none.
func (o Optional[T]) Or(def T) T {
	if v, ok := o.Get(); ok {
		return v
	}
	return def
}

// Ptr returns a pointer to a copy of the value, or nil when absent or null:
// the form nullable fields take in state.
func (o Optional[T]) Ptr() *T {
	v, ok := o.Get()
	if !ok {
		return nil
	}
	return &v
}

// canonical returns o in the form Some, Null or absent build, dropping a
// stray Value beside Null, so events compare equal after a JSON round trip.
func (o Optional[T]) canonical() Optional[T] {
	switch {
	case !o.Present:
		return Optional[T]{}
	case o.Null:
		return Null[T]()
	}
	return Some(o.Value)
}

// MarshalJSON writes the value, or null when the field is null or absent.
func (o Optional[T]) MarshalJSON() ([]byte, error) {
	if !o.HasValue() {
		return []byte("null"), nil
	}
	return json.Marshal(o.Value)
}

// UnmarshalJSON reads null as Null and anything else as a value of T.
// encoding/json calls it only for keys that are present, so a missing key
// leaves the field absent.
func (o *Optional[T]) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*o = Null[T]()
		return nil
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*o = Some(v)
	return nil
}
