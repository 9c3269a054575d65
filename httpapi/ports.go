package httpapi

import (
	"context"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/internal/app"
	"tvsm/internal/app/command"
	"tvsm/internal/app/query"
	"tvsm/projections/readmodel"
)

// The APIs reach the application through the small interfaces below, one
// per side of a resource: the handlers of internal/app/command implement
// the writes, those of internal/app/query the reads. Every method checks the
// caller's provider scope (app.ErrForbidden, 403) and every write returns
// once the read model shows it.

// Writes is the command side of a resource keyed by an integer id: creates
// and updates return the object as the read model then shows it, deletes
// the object as it was.
type Writes[T, F any] interface {
	Create(ctx context.Context, c app.Caller, f F) (T, error)
	Update(ctx context.Context, c app.Caller, id int64, f F) (T, error)
	Delete(ctx context.Context, c app.Caller, id int64) (T, error)
}

// Reads is the query side of a resource keyed by an integer id.
type Reads[T, Q any] interface {
	List(ctx context.Context, c app.Caller, q Q) (readmodel.List[T], error)
	Get(ctx context.Context, c app.Caller, id int64) (T, error)
}

// AccountReads are the reads of accounts, with their history, and of
// accounts and their subscriptions as they stood at a past time.
type AccountReads interface {
	Reads[query.AccountView, readmodel.AccountQuery]
	History(ctx context.Context, c app.Caller, id int64) ([]query.HistoryEntry, error)
	AsOf(ctx context.Context, c app.Caller, id int64, t time.Time) (query.AccountView, error)
	ListAsOf(ctx context.Context, c app.Caller, q readmodel.AccountQuery, t time.Time) (readmodel.List[query.AccountView], error)
	SubscriptionsAsOf(ctx context.Context, c app.Caller, q readmodel.SubscriptionQuery, t time.Time) (readmodel.List[readmodel.Subscription], error)
	DevicesAsOf(ctx context.Context, c app.Caller, q readmodel.DeviceQuery, t time.Time) (readmodel.List[readmodel.Device], error)
}

// ChangeFeed answers the change feed.
type ChangeFeed interface {
	After(ctx context.Context, c app.Caller, after eventstore.Position, limit int) (query.ChangePage, error)
}

// Sender records command sends.
type Sender interface {
	Send(ctx context.Context, c app.Caller, in command.SendInput) (int64, error)
}

// ReceiptReader reads a send with its per-device receipts, and lists past
// sends.
type ReceiptReader interface {
	Receipts(ctx context.Context, c app.Caller, sendID int64) (query.SendView, error)
	List(ctx context.Context, c app.Caller, p readmodel.Page) (readmodel.List[query.SendView], error)
}

// AdminWrites is the command side of administrators, keyed by login.
type AdminWrites interface {
	Create(ctx context.Context, c app.Caller, f command.AdminFields) (domain.Admin, error)
	Update(ctx context.Context, c app.Caller, login string, f command.AdminFields) (domain.Admin, error)
	Delete(ctx context.Context, c app.Caller, login string) (domain.Admin, error)
}

// AdminReads is the query side of administrators, keyed by login.
type AdminReads interface {
	List(ctx context.Context, c app.Caller, q readmodel.AdminQuery) (readmodel.List[domain.Admin], error)
	Get(ctx context.Context, c app.Caller, login string) (domain.Admin, error)
}

// DeviceAuthenticator verifies device tokens. Any failure that means "log
// in again" wraps query.ErrDeviceUnauthorized.
type DeviceAuthenticator interface {
	Authenticate(ctx context.Context, token string) (DeviceIdentity, error)
}

// DeviceSessions are the Device API's reads: who a token is and what its
// account may watch.
type DeviceSessions interface {
	DeviceAuthenticator
	Channels(ctx context.Context, d DeviceIdentity) (query.DeviceChannelList, error)
}

// DeviceWrites are the Device API's commands. ValidateLogin and
// ValidateViewing check the values of a body (*domain.ValidationError), so
// that a 400 names every bad field, those with type errors and those with
// bad values, at once.
type DeviceWrites interface {
	Login(ctx context.Context, in command.DeviceLoginInput) (command.DeviceSession, error)
	ReportViewing(ctx context.Context, d DeviceIdentity, r command.ViewingReport) error
	ValidateLogin(in command.DeviceLoginInput) error
	ValidateViewing(sessions []command.ViewingSession) error
}

// Idempotency runs a create at most once per Idempotency-Key;
// *app.Executor implements it.
type Idempotency interface {
	Idempotent(ctx context.Context, req app.IdempotentRequest, do app.IdempotentFunc) (int, []byte, error)
}

// AccountEraser erases an account's personal data for good;
// *command.Accounts implements it.
type AccountEraser interface {
	Erase(ctx context.Context, c app.Caller, id int64, force bool) error
}

// AccountExporter gathers everything held about an account;
// *query.Accounts implements it.
type AccountExporter interface {
	Export(ctx context.Context, c app.Caller, id int64) (query.Export, error)
}

// ProviderAPI is what the Provider API (/api/provider) needs.
type ProviderAPI struct {
	Accounts     Writes[query.AccountView, command.AccountInput]
	AccountReads AccountReads
	// AccountErasure serves POST /accounts/{id}/erase and AccountExport
	// GET /accounts/{id}/export; nil leaves each out.
	AccountErasure    AccountEraser
	AccountExport     AccountExporter
	Subscriptions     Writes[readmodel.Subscription, command.SubscriptionInput]
	SubscriptionReads Reads[readmodel.Subscription, readmodel.SubscriptionQuery]
	// DeviceSubscriptions are the devices' own subscriptions
	// (/device_subscriptions), with the same input and object.
	DeviceSubscriptions     Writes[readmodel.Subscription, command.SubscriptionInput]
	DeviceSubscriptionReads Reads[readmodel.Subscription, readmodel.SubscriptionQuery]
	// Devices: a create registers a device for an account (pre-bound); a
	// delete unbinds it.
	Devices     Writes[readmodel.Device, command.DeviceInput]
	DeviceReads Reads[readmodel.Device, readmodel.DeviceQuery]
	// DeviceOnline reports whether a device's websocket is open on this
	// node (a device's "online"); nil answers false.
	DeviceOnline func(device int64) bool
	Networks     Writes[readmodel.AccountNetwork, command.NetworkInput]
	NetworkReads Reads[readmodel.AccountNetwork, readmodel.NetworkQuery]
	Changes      ChangeFeed
	// Sends and Receipts serve the command routes; nil leaves them out.
	Sends    Sender
	Receipts ReceiptReader
	// The catalog TVIP's SDK reads (tarifs, tarif_tags, providers,
	// channels, favorite_group, regions, device_types); a nil Reads
	// leaves its collection out.
	Tariffs            Writes[domain.Tariff, command.TariffFields]
	TariffReads        Reads[domain.Tariff, readmodel.TariffQuery]
	TariffTags         Writes[domain.TariffTag, command.TariffTagFields]
	TariffTagReads     Reads[domain.TariffTag, readmodel.TariffTagQuery]
	ProviderReads      Reads[domain.Provider, readmodel.ProviderQuery]
	ChannelReads       Reads[domain.Channel, readmodel.ChannelQuery]
	FavoriteGroupReads Reads[query.FavoriteGroup, readmodel.CategoryQuery]
	RegionReads        Reads[domain.Region, readmodel.RegionQuery]
	DeviceTypes        Writes[domain.DeviceType, command.NameFields]
	DeviceTypeReads    Reads[domain.DeviceType, readmodel.DeviceTypeQuery]
}

// AdminAPI is what the Admin API (/api/admin) needs.
type AdminAPI struct {
	Providers     Writes[domain.Provider, command.ProviderFields]
	ProviderReads Reads[domain.Provider, readmodel.ProviderQuery]
	Tariffs       Writes[domain.Tariff, command.TariffFields]
	TariffReads   Reads[domain.Tariff, readmodel.TariffQuery]
	Channels      Writes[domain.Channel, command.ChannelFields]
	ChannelReads  Reads[domain.Channel, readmodel.ChannelQuery]
	Categories    Writes[domain.Category, command.CategoryFields]
	CategoryReads Reads[domain.Category, readmodel.CategoryQuery]
	Regions       Writes[domain.Region, command.NameFields]
	RegionReads   Reads[domain.Region, readmodel.RegionQuery]
	Admins        AdminWrites
	AdminReads    AdminReads
	// Imports reserves ids for import (POST /import/ids); nil leaves it out.
	Imports ImportIDs
}

// DeviceAPI is what the Device API (/api/device) needs.
type DeviceAPI struct {
	Writes   DeviceWrites
	Sessions DeviceSessions
}
