package command

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/record"
	"tvsm/internal/app/query"
)

// Limits of a viewing report.
const (
	MaxViewingSessions = 1000
	MaxViewingSeconds  = 86400
	// ViewingClockSkew is how far in the future a session may end, for
	// devices whose clocks run ahead.
	ViewingClockSkew = 5 * time.Minute
	// MaxViewingAge is how old a session may be: a device that was offline
	// for a month reports late, one whose clock says 1970 is wrong.
	MaxViewingAge = 31 * 24 * time.Hour
)

// ViewingSession is one session of a viewing report as the device sent it.
type ViewingSession struct {
	Channel int64
	Mode    string
	Start   time.Time
	Seconds int64
}

// ViewingReport is a device's POST /api/device/viewing.
type ViewingReport struct {
	Sessions  []ViewingSession
	RequestID string
	// IdempotencyKey, when set, makes a retry of the report store nothing
	// twice.
	IdempotencyKey string
}

// ReportViewing validates the sessions (every bad field named, as
// sessions[3].mode) and appends them as one domain.ViewingReported to the
// device's stream (a keyed report: to domain.DeviceViewingStream), with the
// device's class, account and provider. An empty report appends nothing.
// It returns once the event is durable.
func (h *Devices) ReportViewing(ctx context.Context, d query.DeviceIdentity, r ViewingReport) error {
	w := h.w
	sessions, err := CheckViewing(r.Sessions, w.now())
	if err != nil || len(sessions) == 0 {
		return err
	}
	e := domain.ViewingReported{DeviceID: d.Device, Account: d.Account, Provider: d.Provider, Class: d.Class, Sessions: sessions}
	meta := deviceMeta(d.Device, r.RequestID)
	// A keyed report goes to a stream of its own, appended only when it
	// does not exist: a retry repeats the same ids at the same expected
	// revision, which every store recognises (EventStoreDB checks appends
	// with Any only against a cache of recent ids).
	stream, expect, ids := domain.DeviceStream(d.Device), eventstore.Any, record.Random()
	if r.IdempotencyKey != "" {
		stream, expect = domain.DeviceViewingStream(d.Device, r.IdempotencyKey), eventstore.NoStream
		ids = record.Derived("viewing|" + strconv.FormatInt(d.Device, 10) + "|" + r.IdempotencyKey)
	}
	_, err = w.rec.Record(ctx, stream, expect, []domain.Event{e},
		domain.Metadata{OccurredAt: w.now(), Actor: meta.Actor, RequestID: meta.RequestID}, ids)
	if err != nil {
		return fmt.Errorf("command: record viewing of device %d: %w", d.Device, err)
	}
	return nil
}

// ValidateViewing reports every bad field of a viewing report at once, as
// a *domain.ValidationError naming them as sessions[3].mode. ReportViewing
// runs it first; the HTTP layer runs it too, to report these problems
// together with the body's type errors.
func (h *Devices) ValidateViewing(sessions []ViewingSession) error {
	_, err := CheckViewing(sessions, h.w.now())
	return err
}

// CheckViewing validates sessions at now and returns their domain form.
func CheckViewing(in []ViewingSession, now time.Time) ([]domain.ViewingSession, error) {
	if len(in) > MaxViewingSessions {
		return nil, domain.NewValidationError("sessions", fmt.Sprintf("must hold at most %d sessions", MaxViewingSessions))
	}
	fields := map[string]string{}
	out := make([]domain.ViewingSession, 0, len(in))
	for i, v := range in {
		field := func(name string) string { return "sessions[" + strconv.Itoa(i) + "]." + name }
		mode := domain.ViewingMode(strings.ToLower(v.Mode))
		if mode != domain.ViewingLive && mode != domain.ViewingDVR {
			fields[field("mode")] = "must be live or dvr"
		}
		if v.Channel <= 0 {
			fields[field("channel_id")] = "must be a positive integer"
		}
		start := v.Start.UTC()
		end := start.Add(time.Duration(v.Seconds) * time.Second)
		switch {
		case start.After(now.Add(ViewingClockSkew)):
			fields[field("start")] = "is in the future"
		case start.Before(now.Add(-MaxViewingAge)):
			fields[field("start")] = "is more than 31 days ago"
		}
		switch {
		case v.Seconds < 1 || v.Seconds > MaxViewingSeconds:
			fields[field("seconds")] = fmt.Sprintf("must be between 1 and %d", MaxViewingSeconds)
		case end.After(now.Add(ViewingClockSkew)) && fields[field("start")] == "":
			fields[field("seconds")] = "the session ends in the future"
		}
		out = append(out, domain.ViewingSession{Channel: v.Channel, Mode: mode, Start: start, Seconds: v.Seconds})
	}
	if len(fields) > 0 {
		return nil, &domain.ValidationError{Fields: fields}
	}
	return out, nil
}
