// Package query is the read side of the application: every read of the
// Provider, Admin and Device APIs is answered here, from the read model
// (projections/readmodel) or, for what only the log holds (account history,
// command receipts, the change feed), from the event store. Each resource
// has a small service of its own (Accounts, Tariffs, Sends, ...); New builds
// them all over one Config. Every read checks the caller's provider scope
// (app.ErrForbidden) and names what it did not find (domain.ErrNotFound).
package query

import (
	"context"
	"errors"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/record"
	"tvsm/internal/adapters/devauth"
	"tvsm/internal/app"
	"tvsm/projections/readmodel"
)

// Config holds what the queries read.
type Config struct {
	Model *readmodel.Model
	// Applied is the read model's applied position (its runner's Progress):
	// a device token issued by a node further ahead is verified once this
	// node has caught up.
	Applied app.ProgressWaiter
	// Store and Registry are read for what only the log holds.
	Store    eventstore.Store
	Registry *domain.Registry
	// ReadYourWritesTimeout bounds the waits for the read model (default
	// app.DefaultReadTimeout).
	ReadYourWritesTimeout time.Duration
	// Clock is the time of reads that depend on it (services available now,
	// command states); default time.Now.
	Clock func() time.Time
	// DeviceTokens verifies device tokens; device authentication fails
	// without it.
	DeviceTokens *devauth.Signer
}

// Queries are the read services, one per resource.
type Queries struct {
	Accounts            *Accounts
	Subscriptions       *Subscriptions
	DeviceSubscriptions *DeviceSubscriptions
	Devices             *Devices
	Networks            *Networks
	Providers           *Providers
	Tariffs             *Tariffs
	TariffTags          *TariffTags
	Channels            *Channels
	// LineUp is the channels with only their live categories.
	LineUp     *LineUp
	Categories *Categories
	// FavoriteGroups are the categories with their channels.
	FavoriteGroups *FavoriteGroups
	Regions        *Regions
	DeviceTypes    *DeviceTypes
	Admins         *Admins
	Changes        *Changes
	Sends          *Sends
	// Sessions authenticates devices and answers the Device API's reads.
	Sessions *Sessions
}

// New returns the queries over cfg.
func New(cfg Config) (*Queries, error) {
	if cfg.Model == nil || cfg.Applied == nil || cfg.Store == nil || cfg.Registry == nil {
		return nil, errors.New("query: Model, Applied, Store and Registry are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	r := &reader{cfg: cfg, rec: record.Log{Store: cfg.Store, Registry: cfg.Registry}}
	categories, channels := newCategories(r), newChannels(r)
	return &Queries{
		Accounts:            &Accounts{r},
		Subscriptions:       newSubscriptions(r, false),
		DeviceSubscriptions: newSubscriptions(r, true),
		Devices:             newDevices(r),
		Networks:            newNetworks(r),
		Providers:           newProviders(r),
		Tariffs:             newTariffs(r),
		TariffTags:          newTariffTags(r),
		Channels:            channels,
		LineUp:              newLineUp(channels),
		Categories:          categories,
		FavoriteGroups:      newFavoriteGroups(categories),
		Regions:             newRegions(r),
		DeviceTypes:         newDeviceTypes(r),
		Admins:              &Admins{r},
		Changes:             &Changes{r},
		Sends:               &Sends{r},
		Sessions:            &Sessions{r},
	}, nil
}

// reader is what every query service shares.
type reader struct {
	cfg Config
	rec record.Log // reads what only the log holds
}

// now is the queries' time, in UTC.
func (r *reader) now() time.Time { return r.cfg.Clock().UTC() }

// waitFor waits until the read model has applied pos.
func (r *reader) waitFor(ctx context.Context, pos eventstore.Position) error {
	return app.WaitApplied(ctx, r.cfg.Applied, pos, r.cfg.ReadYourWritesTimeout)
}
