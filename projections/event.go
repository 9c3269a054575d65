package projections

import (
	"bytes"
	"context"
	"errors"
	"iter"
	"strings"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
)

// Event is a recorded event as the runner hands it to a Handler: decoded
// once, with its stream name parsed and the time it happened read.
type Event struct {
	*eventstore.RecordedEvent
	// StreamRef is the parsed stream name (domain.ParseStream); its Kind
	// is zero for a stream the domain does not name.
	StreamRef domain.StreamRef
	// Payload is the decoded event. It is nil when the registry does not
	// know the type (Unknown), when the handler ignores the type
	// (TypeIgnorer) and when the data does not decode (Err).
	Payload domain.Event
	// Unknown is set for a type the registry does not know: an event
	// written by a newer version of the service, which a projection skips
	// (serving slightly stale state beats serving none during a rolling
	// upgrade).
	Unknown bool
	// Err is set when the data does not decode as its registered type.
	Err error
	// OccurredAt is when the event happened, from its metadata, in UTC;
	// when the store recorded it (Created) if the metadata does not say.
	OccurredAt time.Time
}

// TypeIgnorer is implemented by a Handler that passes over some of the
// event types its Filter lets through (a filter selects by prefix, so it
// cannot leave out one type of a stream it follows). Their data is not
// decoded, which saves the JSON decoding: their Event.Payload is nil.
type TypeIgnorer interface {
	// IgnoredTypes returns event type names; every version of each is
	// ignored.
	IgnoredTypes() []string
}

// TypeFamily returns an event type name without its version: the prefix
// that matches every version of it ("AccountCreated." for
// "AccountCreated.v1"), so that old versions read through upcasters match
// too.
func TypeFamily(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[:i+1]
	}
	return name
}

// Decoder turns recorded events into Events. It is safe for concurrent
// use.
type Decoder struct {
	reg     *domain.Registry
	ignored map[string]bool // by TypeFamily
}

// NewDecoder returns a decoder of the events reg knows that leaves the data
// of ignoredTypes (every version of each) undecoded.
func NewDecoder(reg *domain.Registry, ignoredTypes ...string) *Decoder {
	d := &Decoder{reg: reg}
	if len(ignoredTypes) > 0 {
		d.ignored = make(map[string]bool, len(ignoredTypes))
		for _, t := range ignoredTypes {
			d.ignored[TypeFamily(t)] = true
		}
	}
	return d
}

// DecoderFor returns the decoder a Runner uses for h: reg's, leaving out
// h's IgnoredTypes when h is a TypeIgnorer.
func DecoderFor(reg *domain.Registry, h Handler) *Decoder {
	if ti, ok := h.(TypeIgnorer); ok {
		return NewDecoder(reg, ti.IgnoredTypes()...)
	}
	return NewDecoder(reg)
}

// ApplyRecorded applies recs to h as a Runner would: decoded with reg
// (DecoderFor). For tests and tools that feed a handler without a store.
func ApplyRecorded(ctx context.Context, reg *domain.Registry, h Handler, recs []eventstore.RecordedEvent, mode Mode) error {
	return h.Apply(ctx, DecoderFor(reg, h).Decode(recs), mode)
}

// Decode decodes every event of recs with reg; see Decoder.Decode.
func Decode(reg *domain.Registry, recs []eventstore.RecordedEvent) iter.Seq[*Event] {
	return NewDecoder(reg).Decode(recs)
}

// Decode returns recs decoded, in order. Ranging over the sequence decodes
// long batches ahead on every core while the loop body runs (decodeAhead):
// replaying a log is mostly JSON decoding, which is independent per event,
// while applying must follow log order. An *Event is valid during its
// iteration only; it points into recs.
func (d *Decoder) Decode(recs []eventstore.RecordedEvent) iter.Seq[*Event] {
	return func(yield func(*Event) bool) {
		_ = decodeAhead(recs, d.decode, func(_ *eventstore.RecordedEvent, ev *Event) error {
			if !yield(ev) {
				return errStopped
			}
			return nil
		})
	}
}

// errStopped ends decodeAhead when the range loop stops early.
var errStopped = errors.New("projections: range stopped")

// decode decodes one event into ev. Its failures are the event's (Err):
// the handler decides what they mean.
func (d *Decoder) decode(rec *eventstore.RecordedEvent, ev *Event) error {
	*ev = Event{RecordedEvent: rec, OccurredAt: occurredAt(rec)}
	ev.StreamRef, _ = domain.ParseStream(rec.Stream)
	if d.ignored != nil && d.ignored[TypeFamily(rec.Type)] {
		return nil
	}
	payload, err := d.reg.Decode(rec.Type, rec.Data)
	switch {
	case err == nil:
		ev.Payload = payload
	case errors.Is(err, domain.ErrUnknownEventType):
		ev.Unknown = true
	default:
		ev.Err = err
	}
	return nil
}

// occurredAt returns when the event happened, from its metadata; when the
// store recorded it if the metadata does not say. The common case (the
// compact form domain.EncodeMetadata writes) is read without decoding the
// whole JSON object: replay spends most of its time decoding.
func occurredAt(ev *eventstore.RecordedEvent) time.Time {
	const key = `"occurred_at":"`
	if i := bytes.Index(ev.Metadata, []byte(key)); i >= 0 {
		rest := ev.Metadata[i+len(key):]
		if j := bytes.IndexByte(rest, '"'); j > 0 {
			if t, err := time.Parse(time.RFC3339Nano, string(rest[:j])); err == nil {
				return t.UTC()
			}
		}
	}
	if md, err := domain.DecodeMetadata(ev.Metadata); err == nil {
		return md.OccurredAt
	}
	return ev.Created
}
