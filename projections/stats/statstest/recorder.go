package statstest

import (
	"fmt"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
)

// Recorder turns domain events into the recorded events an event store
// would deliver (stream, position, metadata stamped with a given time), to
// feed projections directly in tests.
type Recorder struct {
	reg *domain.Registry
	// Log is every event recorded, in log order.
	Log []eventstore.RecordedEvent
}

// NewRecorder returns a recorder encoding with reg (a registry with every
// domain event when nil).
func NewRecorder(reg *domain.Registry) *Recorder {
	if reg == nil {
		reg = domain.NewRegistry()
		domain.RegisterEvents(reg)
	}
	return &Recorder{reg: reg}
}

// Record appends ev, stamped at at, to the log and returns it. It panics on
// an event it cannot encode or place in a stream (a mistake in a test).
func (r *Recorder) Record(at time.Time, ev domain.Event) eventstore.RecordedEvent {
	typ, data, err := r.reg.Encode(ev)
	if err != nil {
		panic(err)
	}
	md, err := domain.EncodeMetadata(domain.Envelope{Event: ev, OccurredAt: at, Actor: domain.SystemActor(), RequestID: "statstest"})
	if err != nil {
		panic(err)
	}
	pos := uint64(len(r.Log) + 1)
	rec := eventstore.RecordedEvent{ID: eventstore.DeriveEventID("statstest", int(pos)), Stream: StreamOf(ev),
		Position: eventstore.Position{Commit: pos, Prepare: pos}, Type: typ, Data: data, Metadata: md, Created: at}
	r.Log = append(r.Log, rec)
	return rec
}

// StreamOf returns the stream an event is appended to.
func StreamOf(ev domain.Event) string {
	switch ev := ev.(type) {
	case domain.ProviderCreated:
		return domain.ProviderStream(ev.ProviderID)
	case domain.TariffCreated:
		return domain.TariffStream(ev.TariffID)
	case domain.TariffDeleted:
		return domain.TariffStream(ev.TariffID)
	case domain.ChannelCreated:
		return domain.ChannelStream(ev.ChannelID)
	case domain.CategoryCreated:
		return domain.CategoryStream(ev.CategoryID)
	case domain.ViewingReported:
		return domain.DeviceStream(ev.DeviceID)
	case domain.DeviceConnected:
		return domain.DeviceStream(ev.DeviceID)
	case domain.DeviceDisconnected:
		return domain.DeviceStream(ev.DeviceID)
	}
	return domain.AccountStream(accountOf(ev))
}

func accountOf(ev domain.Event) int64 {
	switch ev := ev.(type) {
	case domain.AccountCreated:
		return ev.AccountID
	case domain.AccountUpdated:
		return ev.AccountID
	case domain.AccountDeleted:
		return ev.AccountID
	case domain.SubscriptionAdded:
		return ev.AccountID
	case domain.SubscriptionChanged:
		return ev.AccountID
	case domain.SubscriptionRemoved:
		return ev.AccountID
	case domain.DeviceBound:
		return ev.AccountID
	case domain.DeviceUnbound:
		return ev.AccountID
	}
	panic(fmt.Sprintf("statstest: no stream for %T", ev))
}
