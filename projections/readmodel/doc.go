// Package readmodel is the in-memory read model of tvsm: the providers,
// tariffs, tariff tags, channels, categories, regions, device types and
// administrators, and the accounts with
// their subscriptions and devices, as the Provider, Admin and Device APIs
// read them. It is rebuilt from the event log, persisted only as snapshots,
// and has no database.
//
// # Feeding it
//
// A Model is a projections.Handler named Name ("readmodel.v2"). Its filter
// selects the aggregate streams (account-, provider-, tariff-, channel-,
// category-, admin-, tariff_tag-, region-, device_type-) and, for device authorisation, the command sends
// (CommandsIssued in command-) and device connections (DeviceConnected in
// device-); the application layer's bookkeeping streams (ids-*, idem-*,
// login-*), delivery claims, receipts and viewing reports never reach it.
// Apply decodes each event with the domain.Registry and applies it with
// the aggregate's own Evolve function, so the model means what the domain
// means. It is idempotent by per-stream revision (eventhorizon's rule): an
// event at or below the revision already applied for its entity is
// skipped, and deleted accounts keep their revision as a tombstone.
// Feeding a batch twice, or replaying a tail the state already holds,
// changes nothing.
//
// # Reading it
//
// One goroutine (the runner's) applies; any number read. Each event is
// applied under the write lock of a sync.RWMutex, so a reader sees the
// state between two events, never inside one. Account records are
// immutable once published: a change builds a new record and swaps it in.
// Queries therefore never hand out memory the applier changes: lookups
// return copies (Account, Subscription, Device views and copies of the
// domain's Provider, Tariff, Channel, Category, Admin), and a list fixes
// its page of records under the read lock, then releases it and builds
// each item as List.Items yields it, so the HTTP layer can stream a list
// of any length (limit <= 0) without blocking the applier.
//
// Lookups by id (and by login, unique id) ignore provider scope; the
// caller compares the Provider of what it got with the administrator's
// scope to answer 403 or 404. Every list of provider-owned rows takes a
// Scope, whose zero value matches nothing: a superadmin passes
// AllProviders, a provider-scoped administrator ProviderScope(p) (see
// ScopeOf). Channels, categories, regions and device types belong to no
// provider and are listed for everyone.
//
// Lists: accounts (filters provider, enabled, login exact, remote_custom_field
// exact, quick_search: a case-insensitive substring of login, fullname or
// contract_info), subscriptions (account, tarif, provider), devices
// (account, provider, unique_id), tariffs (provider, enabled, channel, tag,
// name search), tariff tags (provider, enabled, name search), providers
// (enabled, name search), channels (category, tariff, enabled, search of
// name and text name), categories, regions and device types (name search),
// administrators. Each sorts by id (the default) or by the fields in its
// *SortFields variable, ascending or descending, ties broken by ascending
// id, and pages by Start/Limit with the total before paging. Accounts,
// subscriptions and devices are kept in chunked id-ordered lists per
// provider and overall, so a page in id order without filters is found
// under the read lock by skipping whole chunks (microseconds). Otherwise
// the rows in scope are gathered under the lock and filtered and sorted
// after it, so a slow query never holds up the applier: at a million
// accounts a filter takes about 45 ms, quick_search 0.25 s, another order
// about a second (BenchmarkListAccounts1M).
//
// # Device authorisation
//
// A device token carries the commit position of the model that issued it.
// AuthorizedDevice (AuthorizationDropped) tells whether it still holds: the
// device is bound to the token's account of the token's provider, and no
// `update` command issued after that position targeted the device, its
// account or its provider. Drops are kept per target id (a provider-wide
// send is one entry), only for live accounts and devices, and forgotten
// with them. DeviceLastConnected gives a bound device's last websocket
// connection.
//
// # Memory
//
// An account is one compact record (ids and times as integers, its eight
// text fields packed into one string with null bits, subscriptions and
// devices as small value slices) plus its entries in the indexes (id maps,
// login per provider, device unique id, subscription and device ids). A
// typical account (login of 12 characters, fullname 25, contract_info 20,
// one subscription, one or two devices, each of which has connected once)
// takes about 740 bytes with everything (the last connections are about 40
// of them), measured at a million accounts by BenchmarkMemoryPerAccount;
// TestMemoryPerAccount holds 10,000 accounts to 1 KiB each. Authorisation
// drops cost nothing until an `update` targets an account or a device.
//
// # Snapshots
//
// WriteSnapshot stores the state with the position of the newest event it
// holds, atomically (projections.WriteSnapshot); LoadSnapshot restores it,
// and the runner resumes after that position through
// projections.SnapshotCheckpoints{Position: pos}. The payload is a compact
// binary encoding (the small entities as JSON); loading a million accounts
// takes about 1.4 s on two cores (BenchmarkLoadSnapshot1M). A snapshot the
// code cannot read (missing, damaged, or of another format version) is an
// error: start empty and replay the whole log. Taking a snapshot holds the
// read lock only while it copies the record pointers and the entries of
// the authorisation maps (about 60 ms for a million accounts whose 1.5
// million devices have all connected, BenchmarkSnapshotCapture1M); writing
// takes about a second more, without the lock. Without
// a snapshot, Apply replays about 200,000 events a second (BenchmarkApply).
//
// # Readiness
//
// The model has no readiness flag of its own: the Runner reports when it
// has caught up with the log (RunnerOptions.OnCaughtUp, Stats().CaughtUp),
// which is what /readyz should report, and its Progress gives
// read-your-writes (app.WaitApplied).
//
// # History and change feed
//
// The model keeps nothing for them, since the log has it all.
// GET /api/provider/accounts/{id}/history reads the stream account-{id}
// (eventstore.Store.ReadStream), decodes each event and its metadata (time,
// actor, request id) and folds the events through the domain's Evolve,
// calling domain.Account.Diff on the state before each event for the field
// changes. GET /api/provider/changes?after=<position>&limit= subscribes to
// the log after the position with this model's Filter (SubscribeAll),
// returns up to limit events with their positions, stopping at the first
// caught-up batch, and answers the last position for the next call. Both
// check scope by the account's provider, which AccountOwner knows even
// after the account is deleted.
package readmodel
