package query

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
)

// ErrDeviceUnauthorized is the answer to a device token that is malformed,
// expired or revoked (an `update` command, the device unbound, its account
// deleted): the device must log in again.
var ErrDeviceUnauthorized = errors.New("device token invalid, expired or revoked")

// ErrNoDeviceTokens is a wiring error: Config.DeviceTokens is missing.
var ErrNoDeviceTokens = errors.New("device tokens are not configured")

// ErrNoServices: the device's account has no services now.
var ErrNoServices = errors.New("no services")

// NoServicesError is the answer to a channel list request of a device
// without services; errors.Is(err, ErrNoServices) holds.
type NoServicesError struct{ Message string }

func (e *NoServicesError) Error() string { return "no services: " + e.Message }

// Unwrap returns ErrNoServices.
func (e *NoServicesError) Unwrap() error { return ErrNoServices }

// Messages shown by devices that get no services.
const (
	MsgProviderDisabled = "Services are suspended by your operator."
	MsgAccountDisabled  = "Services are disabled on this account. Please contact your operator."
	MsgNoSubscription   = "There are no active services on this account."
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

// Sessions answers the Device API's reads: who a token is, and what its
// account may watch.
type Sessions struct{ r *reader }

// Authenticate verifies a device token: its signature and expiry, then,
// against the read model, that the device is still bound to the token's
// account of the token's provider and that no `update` command dropped its
// authorisation after the token was issued. A token issued by a node whose
// read model was ahead of this one waits (bounded, as read-your-writes
// does) for this one to catch up. Any failure is ErrDeviceUnauthorized.
func (q *Sessions) Authenticate(ctx context.Context, token string) (DeviceIdentity, error) {
	if q.r.cfg.DeviceTokens == nil {
		return DeviceIdentity{}, ErrNoDeviceTokens
	}
	c, err := q.r.cfg.DeviceTokens.Verify(token)
	if err != nil {
		return DeviceIdentity{}, fmt.Errorf("%w: %w", ErrDeviceUnauthorized, err)
	}
	if c.Position > q.r.cfg.Model.Position().Commit {
		// Position{Commit: p} (Prepare 0) is reached by any position with
		// that commit, on every backend.
		if err := q.r.waitFor(ctx, eventstore.Position{Commit: c.Position}); err != nil {
			return DeviceIdentity{}, err
		}
	}
	d, ok := q.r.cfg.Model.AuthorizedDevice(c.Device, c.Account, c.Provider, c.Position)
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

// Channels returns the channels of the tariffs the device's account is
// subscribed to now (the union, sorted by number, then id; deleted and
// disabled channels and deleted categories left out), or a
// *NoServicesError when the account has no services now.
func (q *Sessions) Channels(_ context.Context, d DeviceIdentity) (DeviceChannelList, error) {
	a, ok := q.r.cfg.Model.AccountState(d.Account)
	if !ok {
		return DeviceChannelList{}, fmt.Errorf("%w: account %d is gone", ErrDeviceUnauthorized, d.Account)
	}
	tariffs, msg := q.Services(a, d.Device)
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
			if ch, ok := q.r.cfg.Model.Channel(id); ok && !ch.Disabled {
				out.Channels = append(out.Channels, q.deviceChannel(ch, out.Categories))
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
func (q *Sessions) deviceChannel(ch domain.Channel, names map[int64]string) DeviceChannel {
	dc := DeviceChannel{ID: ch.ID, Name: ch.Name, Number: ch.Number, LogoURL: ch.LogoURL, Categories: []int64{}}
	for _, id := range ch.Categories {
		name, known := names[id]
		if !known {
			if cat, ok := q.r.cfg.Model.Category(id); ok {
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

// Services returns the tariffs that give device (of the account) service
// now — through the account's subscriptions and the device's own — or,
// when there are none, the message saying why: the provider or the account
// is disabled, or no subscription active now is to an existing, enabled
// tariff.
func (q *Sessions) Services(a domain.Account, device int64) ([]domain.Tariff, string) {
	m := q.r.cfg.Model
	if p, ok := m.Provider(a.Provider); !ok || !p.Enabled {
		return nil, MsgProviderDisabled
	}
	if !a.Exists() || !a.Enabled {
		return nil, MsgAccountDisabled
	}
	var tariffs []domain.Tariff
	for _, id := range a.DeviceActiveTariffs(device, q.r.now()) {
		if t, ok := m.Tariff(id); ok && t.Enabled {
			tariffs = append(tariffs, t)
		}
	}
	if len(tariffs) == 0 {
		return nil, MsgNoSubscription
	}
	return tariffs, ""
}
