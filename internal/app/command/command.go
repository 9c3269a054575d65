// Package command is the write side of the application: every change the
// Provider, Admin and Device APIs make is a command handled here. A handler
// checks the caller's scope and the request's fields (naming every bad field
// at once), takes new ids, runs the domain's decision through the executor
// (internal/app: load the stream, decide, append with the expected revision,
// retry on conflict), waits until the read model shows the write
// (read-your-writes) and answers with the changed object as the queries
// show it. Each resource has a small handler type of its own (Accounts,
// Tariffs, Sends, ...); New builds them all over one Config.
//
// Handlers know nothing of HTTP. A create run inside app.Executor.Idempotent
// takes its ids from Executor.NewID with the context it is given, so a
// retried request creates the same objects once.
package command

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/record"
	"tvsm/internal/adapters/devauth"
	"tvsm/internal/app"
	"tvsm/internal/app/query"
	"tvsm/projections/readmodel"
)

// Config holds the dependencies of the command handlers.
type Config struct {
	Executor *app.Executor
	// Model is read to check references (does the tariff exist?) and scope
	// before a command is decided.
	Model *readmodel.Model
	// Applied is the read model's applied position (its runner's Progress).
	Applied app.ProgressWaiter
	// Queries render the answers to writes.
	Queries *query.Queries
	// ReadYourWritesTimeout bounds the wait for the read model after a write
	// (default app.DefaultReadTimeout); past it the write is done but the
	// call fails with app.ErrReadModelLag (503).
	ReadYourWritesTimeout time.Duration
	// BcryptCost hashes admin passwords (default 10).
	BcryptCost int
	Logger     *slog.Logger
	// Clock is the time of checks that depend on it; default time.Now.
	// Give it the executor's clock.
	Clock func() time.Time
	// DeviceTokens issues device tokens at login; device login fails
	// without it.
	DeviceTokens *devauth.Signer
	// BillingURL, when set, checks a provider's billing url beyond its
	// form (the billing proxy's address policy); its error is the field's
	// problem.
	BillingURL func(url string) error
	// DefaultDeviceLimit is the device limit of an account when neither
	// the account nor its provider sets devices_per_account_limit; nil
	// means none.
	DefaultDeviceLimit *int
	// Keys destroys a data subject's key: what makes an account's erasure
	// real. Erasure fails without it.
	Keys KeyEraser
	// SendClaims, when set, lets a send carry this node's delivery claim
	// in its own append (the node's command dispatcher).
	SendClaims SendClaimer
}

// SendClaimer is the node's command dispatcher as the send path sees it. A
// send appended with the claim of the target devices connected to this
// node reaches them after one durable append instead of two (the send's,
// then the claim's).
type SendClaimer interface {
	// ClaimWithSend returns this node's claim of the commands of issued
	// due now (CommandsSent events), to be appended with it in one append;
	// none when there is nothing to claim here, or no claim can be made
	// at once.
	ClaimWithSend(ctx context.Context, issued domain.CommandsIssued) []domain.Event
	// SendAppended reports that the send's append is durable up to
	// lastRevision of its stream. It never blocks.
	SendAppended(send int64, lastRevision uint64)
}

// KeyEraser destroys the key a data subject's (an account's) personal
// data is encrypted under, for good and durably.
type KeyEraser interface {
	Erase(ctx context.Context, subject int64) error
}

// Commands are the command handlers, one per resource.
type Commands struct {
	Accounts            *Accounts
	Subscriptions       *Subscriptions
	DeviceSubscriptions *Subscriptions
	Devices             *Devices
	Networks            *Networks
	Providers           *Providers
	Tariffs             *Tariffs
	TariffTags          *TariffTags
	Channels            *Channels
	Categories          *Categories
	Regions             *Regions
	DeviceTypes         *DeviceTypes
	Admins              *Admins
	Sends               *Sends
	Imports             *Imports
}

// New returns the command handlers over cfg.
func New(cfg Config) (*Commands, error) {
	if cfg.Executor == nil || cfg.Model == nil || cfg.Applied == nil || cfg.Queries == nil {
		return nil, errors.New("command: Executor, Model, Applied and Queries are required")
	}
	if cfg.BcryptCost <= 0 {
		cfg.BcryptCost = 10
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	w := &writer{cfg: cfg, x: cfg.Executor, model: cfg.Model, q: cfg.Queries, log: cfg.Logger,
		rec: cfg.Executor.Log()}
	return &Commands{
		Accounts:            &Accounts{w},
		Subscriptions:       &Subscriptions{w: w},
		DeviceSubscriptions: &Subscriptions{w: w, devices: true},
		Devices:             &Devices{w},
		Networks:            &Networks{w},
		Providers:           &Providers{w},
		Tariffs:             &Tariffs{w},
		TariffTags:          &TariffTags{w},
		Channels:            &Channels{w},
		Categories:          newCategories(w),
		Regions:             newRegions(w),
		DeviceTypes:         newDeviceTypes(w),
		Admins:              &Admins{w},
		Sends:               &Sends{w},
		Imports:             &Imports{w},
	}, nil
}

// providerDeviceLimit is the device limit of the accounts of provider that
// set none themselves: the provider's devices_per_account_limit, else the
// node's default (nil: unlimited). The account's own limit, when set, wins
// over it (domain.Account.DeviceLimit).
func (w *writer) providerDeviceLimit(provider int64) *int {
	if p, ok := w.model.Provider(provider); ok && p.DevicesPerAccountLimit != nil {
		return p.DevicesPerAccountLimit
	}
	return w.cfg.DefaultDeviceLimit
}

// writer is what every command handler shares.
type writer struct {
	cfg   Config
	x     *app.Executor
	model *readmodel.Model
	q     *query.Queries
	log   *slog.Logger
	rec   record.Log // for events no decision makes, and for reading streams back
}

// now is the handlers' time, in UTC.
func (w *writer) now() time.Time { return w.cfg.Clock().UTC() }

// written waits until the read model has applied pos, so that the caller's
// next read sees its write.
func (w *writer) written(ctx context.Context, pos eventstore.Position) error {
	if pos.IsZero() {
		return nil
	}
	return app.WaitApplied(ctx, w.cfg.Applied, pos, w.cfg.ReadYourWritesTimeout)
}

// execute runs cmd on stream with the caller's metadata and waits until
// the read model shows its result.
func execute[S, C any](ctx context.Context, w *writer, c app.Caller, stream string, d domain.Decider[S, C], cmd C) (app.Result[S], error) {
	res, err := app.Execute(ctx, w.x, stream, d, cmd, c.Meta())
	if err != nil {
		return res, err
	}
	return res, w.written(ctx, res.Position)
}
