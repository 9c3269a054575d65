package domain

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Metadata is what every stored event carries besides its data: when it
// happened (UTC), who caused it and the request that caused it.
type Metadata struct {
	OccurredAt time.Time
	Actor      Actor
	RequestID  string
}

// Envelope is an event together with its metadata, ready to be encoded and
// appended.
type Envelope struct {
	Event      Event
	OccurredAt time.Time
	Actor      Actor
	RequestID  string
}

// Metadata returns the metadata of e.
func (e Envelope) Metadata() Metadata {
	return Metadata{OccurredAt: e.OccurredAt, Actor: e.Actor, RequestID: e.RequestID}
}

// Wrap returns one envelope per event, each carrying m; decide functions
// return bare events and the application layer wraps them with this.
func (m Metadata) Wrap(events ...Event) []Envelope {
	out := make([]Envelope, len(events))
	for i, e := range events {
		out[i] = Envelope{Event: e, OccurredAt: m.OccurredAt, Actor: m.Actor, RequestID: m.RequestID}
	}
	return out
}

// ErrInvalidMetadata reports event metadata that is missing a field or
// malformed. Errors from EncodeMetadata and DecodeMetadata wrap it.
var ErrInvalidMetadata = errors.New("invalid event metadata")

// MaxRequestIDLen is the maximum length of a request id in bytes.
const MaxRequestIDLen = 200

// occurredAtLayout is RFC 3339 in UTC with exactly nine fractional digits,
// so stored timestamps have one fixed width and sort as text.
const occurredAtLayout = "2006-01-02T15:04:05.000000000Z07:00"

// metadataJSON is the stored form of Metadata.
type metadataJSON struct {
	OccurredAt string `json:"occurred_at"`
	Actor      string `json:"actor"`
	RequestID  string `json:"request_id"`
}

// EncodeMetadata returns the stored form of e's metadata, compact JSON such as
//
//	{"occurred_at":"2026-11-22T17:59:41.123456789Z","actor":"admin:alice","request_id":"r-1"}
//
// OccurredAt is converted to UTC. It fails, wrapping ErrInvalidMetadata, when
// OccurredAt is zero or outside years 1–9999 in UTC, the actor is invalid or
// the request id fails ValidateRequestID.
func EncodeMetadata(e Envelope) ([]byte, error) {
	m := e.Metadata()
	if err := m.validate(); err != nil {
		return nil, err
	}
	return appendMetadataJSON(nil, m), nil
}

// appendMetadataJSON appends what json.Marshal writes for the metadataJSON
// of valid metadata m (FuzzMetadataJSON checks that), without its
// reflection: metadata is written with every event.
func appendMetadataJSON(dst []byte, m Metadata) []byte {
	dst = slices.Grow(dst, 80+len(m.Actor.Kind)+len(m.Actor.ID)+len(m.RequestID))
	dst = appendOccurredAt(append(dst, `{"occurred_at":"`...), m.OccurredAt.UTC())
	dst = appendJSONStringBody(append(dst, `","actor":"`...), string(m.Actor.Kind))
	if m.Actor.ID != "" {
		// A valid kind is ASCII, so escaping the parts escapes the whole.
		dst = appendJSONStringBody(append(dst, ':'), m.Actor.ID)
	}
	dst = appendJSONStringBody(append(dst, `","request_id":"`...), m.RequestID)
	return append(dst, `"}`...)
}

// appendOccurredAt appends t.Format(occurredAtLayout) for t in UTC within
// years 1-9999, without parsing the layout each time. It writes only
// digits, '-', ':', 'T', '.' and 'Z': nothing a JSON string escapes.
func appendOccurredAt(dst []byte, t time.Time) []byte {
	year, month, day := t.Date()
	hour, minute, sec := t.Clock()
	dst = appendDigits(dst, year, 4)
	dst = appendDigits(append(dst, '-'), int(month), 2)
	dst = appendDigits(append(dst, '-'), day, 2)
	dst = appendDigits(append(dst, 'T'), hour, 2)
	dst = appendDigits(append(dst, ':'), minute, 2)
	dst = appendDigits(append(dst, ':'), sec, 2)
	dst = appendDigits(append(dst, '.'), t.Nanosecond(), 9)
	return append(dst, 'Z')
}

// appendDigits appends the last width decimal digits of v >= 0, zero-padded.
func appendDigits(dst []byte, v, width int) []byte {
	dst = append(dst, make([]byte, width)...)
	for i := len(dst) - 1; i >= len(dst)-width; i-- {
		dst[i] = byte('0' + v%10)
		v /= 10
	}
	return dst
}

// readMetadataJSON reads the form appendMetadataJSON writes as
// json.Unmarshal would; ok false leaves other forms to json.Unmarshal.
func readMetadataJSON(data []byte) (w metadataJSON, ok bool) {
	r := NewJSONReader(data)
	r.Expect(`{"occurred_at":`)
	w.OccurredAt = r.Str()
	r.Expect(`,"actor":`)
	w.Actor = r.Str()
	r.Expect(`,"request_id":`)
	w.RequestID = r.Str()
	r.Expect(`}`)
	if !r.OK() {
		return metadataJSON{}, false
	}
	return w, true
}

// DecodeMetadata parses the stored form written by EncodeMetadata. It
// accepts any RFC 3339 time and returns it in UTC; unknown fields are
// ignored. It fails, wrapping ErrInvalidMetadata, on data that is not a JSON
// object, a missing or malformed field, or anything EncodeMetadata rejects.
func DecodeMetadata(data []byte) (Metadata, error) {
	if !isJSONObject(data) {
		return Metadata{}, fmt.Errorf("%w: not a JSON object", ErrInvalidMetadata)
	}
	w, ok := readMetadataJSON(data)
	if !ok {
		if err := json.Unmarshal(data, &w); err != nil {
			return Metadata{}, fmt.Errorf("%w: %w", ErrInvalidMetadata, err)
		}
	}
	if w.OccurredAt == "" {
		return Metadata{}, fmt.Errorf("%w: occurred_at: required", ErrInvalidMetadata)
	}
	at, err := time.Parse(time.RFC3339Nano, w.OccurredAt)
	if err != nil {
		return Metadata{}, fmt.Errorf("%w: occurred_at %q: want an RFC 3339 time such as 2026-11-22T17:59:41.123456789Z", ErrInvalidMetadata, w.OccurredAt)
	}
	if w.Actor == "" {
		return Metadata{}, fmt.Errorf("%w: actor: required", ErrInvalidMetadata)
	}
	actor, err := ParseActor(w.Actor)
	if err != nil {
		return Metadata{}, fmt.Errorf("%w: actor: %w", ErrInvalidMetadata, err)
	}
	// What validate checks besides the actor, which ParseActor has checked.
	if err := validateOccurredAt(at); err != nil {
		return Metadata{}, err
	}
	if err := validateMetadataRequestID(w.RequestID); err != nil {
		return Metadata{}, err
	}
	return Metadata{OccurredAt: at.UTC(), Actor: actor, RequestID: w.RequestID}, nil
}

func (m Metadata) validate() error {
	if err := validateOccurredAt(m.OccurredAt); err != nil {
		return err
	}
	if err := m.Actor.Validate(); err != nil {
		return fmt.Errorf("%w: actor: %w", ErrInvalidMetadata, err)
	}
	return validateMetadataRequestID(m.RequestID)
}

func validateOccurredAt(at time.Time) error {
	at = at.UTC()
	switch {
	case at.IsZero():
		return fmt.Errorf("%w: occurred_at: required", ErrInvalidMetadata)
	case at.Year() < 1 || at.Year() > 9999:
		return fmt.Errorf("%w: occurred_at %s: year outside 1-9999", ErrInvalidMetadata, at)
	}
	return nil
}

func validateMetadataRequestID(id string) error {
	if err := ValidateRequestID(id); err != nil {
		return fmt.Errorf("%w: request_id: %w", ErrInvalidMetadata, err)
	}
	return nil
}

// ValidateRequestID reports whether id can be stored as a request id: 1 to
// MaxRequestIDLen bytes of printable ASCII without spaces (UUIDs, ULIDs and
// W3C traceparent values qualify). HTTP handlers use it to decide whether to
// adopt a client's X-Request-ID or generate their own.
func ValidateRequestID(id string) error {
	switch {
	case id == "":
		return errors.New("required")
	case len(id) > MaxRequestIDLen:
		return fmt.Errorf("longer than %d bytes", MaxRequestIDLen)
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return fmt.Errorf("byte %#02x at %d is not printable ASCII", id[i], i)
		}
	}
	return nil
}
