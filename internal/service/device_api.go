package service

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/record"
)

// DeviceIdentity is an authenticated device: who it is, as its token and
// the read model say.
type DeviceIdentity struct {
	Device   int64
	Account  int64
	Provider int64
	Class    domain.DeviceClass
	UniqueID string
	// Expires is when the device's token expires.
	Expires time.Time
}

// AuthenticateDevice verifies a device token: its signature and expiry,
// then, against the read model, that the device is still bound to the
// token's account of the token's provider and that no `update` command
// dropped its authorisation after the token was issued. A token issued by a
// node whose read model was ahead of this one waits (bounded, as
// read-your-writes does) for this one to catch up. Any failure is
// ErrDeviceUnauthorized.
func (s *Service) AuthenticateDevice(ctx context.Context, token string) (DeviceIdentity, error) {
	if s.cfg.DeviceTokens == nil {
		return DeviceIdentity{}, errNoDeviceTokens
	}
	c, err := s.cfg.DeviceTokens.Verify(token)
	if err != nil {
		return DeviceIdentity{}, fmt.Errorf("%w: %w", ErrDeviceUnauthorized, err)
	}
	if c.Position > s.cfg.Model.Position().Commit {
		// Position{Commit: p} (Prepare 0) is reached by any position with
		// that commit, on every backend.
		if err := s.written(ctx, eventstore.Position{Commit: c.Position}); err != nil {
			return DeviceIdentity{}, err
		}
	}
	d, ok := s.cfg.Model.AuthorizedDevice(c.Device, c.Account, c.Provider, c.Position)
	if !ok {
		return DeviceIdentity{}, fmt.Errorf("%w: device %d of account %d: authorisation dropped", ErrDeviceUnauthorized, c.Device, c.Account)
	}
	return DeviceIdentity{Device: d.ID, Account: d.Account, Provider: d.Provider, Class: d.Class, UniqueID: d.UniqueID, Expires: c.Expires}, nil
}

// DeviceChannel is a channel as the Device API lists it.
type DeviceChannel struct {
	ID         int64
	Name       string
	Number     int
	LogoURL    string
	Categories []int64
}

// DeviceChannelList is the answer to GET /api/device/channels: the
// channels and the names of the categories they name.
type DeviceChannelList struct {
	Channels   []DeviceChannel
	Categories map[int64]string
}

// DeviceChannels returns the channels of the tariffs the device's account
// is subscribed to now (the union, sorted by number, then id; deleted
// channels and categories left out), or a *NoServicesError when the
// account has no services now.
func (s *Service) DeviceChannels(ctx context.Context, d DeviceIdentity) (DeviceChannelList, error) {
	a, ok := s.cfg.Model.AccountState(d.Account)
	if !ok {
		return DeviceChannelList{}, fmt.Errorf("%w: account %d is gone", ErrDeviceUnauthorized, d.Account)
	}
	tariffs, msg := s.deviceServices(a, s.now())
	if msg != "" {
		return DeviceChannelList{}, &NoServicesError{Message: msg}
	}
	out := DeviceChannelList{Channels: []DeviceChannel{}, Categories: map[int64]string{}}
	seen := map[int64]bool{}
	for _, t := range tariffs {
		for _, id := range t.Channels {
			if seen[id] {
				continue
			}
			seen[id] = true
			if ch, ok := s.cfg.Model.Channel(id); ok {
				out.Channels = append(out.Channels, s.deviceChannel(ch, out.Categories))
			}
		}
	}
	slices.SortFunc(out.Channels, func(a, b DeviceChannel) int {
		return cmp.Or(cmp.Compare(a.Number, b.Number), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// deviceChannel returns ch as devices see it, adding the names of its
// categories to names.
func (s *Service) deviceChannel(ch domain.Channel, names map[int64]string) DeviceChannel {
	dc := DeviceChannel{ID: ch.ID, Name: ch.Name, Number: ch.Number, LogoURL: ch.LogoURL, Categories: []int64{}}
	for _, id := range ch.Categories {
		name, known := names[id]
		if !known {
			if cat, ok := s.cfg.Model.Category(id); ok {
				name, known = cat.Name, true
				names[id] = name
			}
		}
		if known {
			dc.Categories = append(dc.Categories, id)
		}
	}
	return dc
}

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
// device's stream, with the device's class, account and provider. An empty
// report appends nothing. It returns once the event is durable.
func (s *Service) ReportViewing(ctx context.Context, d DeviceIdentity, r ViewingReport) error {
	sessions, err := CheckViewing(r.Sessions, s.now())
	if err != nil || len(sessions) == 0 {
		return err
	}
	e := domain.ViewingReported{DeviceID: d.Device, Account: d.Account, Provider: d.Provider, Class: d.Class, Sessions: sessions}
	meta := deviceMeta(d.Device, r.RequestID)
	ids := record.Random()
	if r.IdempotencyKey != "" {
		ids = record.Derived("viewing|" + strconv.FormatInt(d.Device, 10) + "|" + r.IdempotencyKey)
	}
	_, err = s.rec.Record(ctx, domain.DeviceStream(d.Device), eventstore.Any, []domain.Event{e},
		domain.Metadata{OccurredAt: s.now(), Actor: meta.Actor, RequestID: meta.RequestID}, ids)
	if err != nil {
		return fmt.Errorf("service: record viewing of device %d: %w", d.Device, err)
	}
	return nil
}

// ValidateViewing reports every bad field of a viewing report at once, as
// a *domain.ValidationError naming them as sessions[3].mode. ReportViewing
// runs it first; the HTTP layer runs it too, to report these problems
// together with the body's type errors.
func (s *Service) ValidateViewing(sessions []ViewingSession) error {
	_, err := CheckViewing(sessions, s.now())
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
