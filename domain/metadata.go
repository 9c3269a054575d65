package domain

import (
	"encoding/json"
	"errors"
	"fmt"
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
	return json.Marshal(metadataJSON{
		OccurredAt: m.OccurredAt.UTC().Format(occurredAtLayout),
		Actor:      m.Actor.String(),
		RequestID:  m.RequestID,
	})
}

// DecodeMetadata parses the stored form written by EncodeMetadata. It
// accepts any RFC 3339 time and returns it in UTC; unknown fields are
// ignored. It fails, wrapping ErrInvalidMetadata, on data that is not a JSON
// object, a missing or malformed field, or anything EncodeMetadata rejects.
func DecodeMetadata(data []byte) (Metadata, error) {
	if !isJSONObject(data) {
		return Metadata{}, fmt.Errorf("%w: not a JSON object", ErrInvalidMetadata)
	}
	var w metadataJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return Metadata{}, fmt.Errorf("%w: %w", ErrInvalidMetadata, err)
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
	m := Metadata{OccurredAt: at.UTC(), Actor: actor, RequestID: w.RequestID}
	if err := m.validate(); err != nil {
		return Metadata{}, err
	}
	return m, nil
}

func (m Metadata) validate() error {
	at := m.OccurredAt.UTC()
	switch {
	case at.IsZero():
		return fmt.Errorf("%w: occurred_at: required", ErrInvalidMetadata)
	case at.Year() < 1 || at.Year() > 9999:
		return fmt.Errorf("%w: occurred_at %s: year outside 1-9999", ErrInvalidMetadata, at)
	}
	if err := m.Actor.Validate(); err != nil {
		return fmt.Errorf("%w: actor: %w", ErrInvalidMetadata, err)
	}
	if err := ValidateRequestID(m.RequestID); err != nil {
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
