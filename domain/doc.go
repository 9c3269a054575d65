// Package domain holds tvsm's event-sourced core: domain events and their
// stable, versioned type names, the registry that encodes and decodes them,
// event metadata (occurred-at, actor, request id) and the Decider shape that
// every aggregate follows: func(state, command, now) ([]Event, error).
//
// The package is pure: standard library only, no I/O, no clock and no
// mutable globals. Time always comes in as an argument; infrastructure
// (event store, projections, HTTP) lives in other packages and depends on
// this one, never the other way round.
//
// Event type names have the form AggregateVerbed.vN (for example
// AccountCreated.v1). They are constants registered explicitly with a
// Registry and are never derived from Go type names, so renaming a Go type
// never changes what is stored. A change to an event's JSON shape gets a new
// version (X.v2) and an upcaster from X.v1, so stored events stay readable.
// Events are stored as encoding/json writes them; the hottest ones
// (AccountCreated, AccountUpdated) and the metadata are written and read by
// hand (JSONCodec) to the same bytes and values, without its reflection.
//
// The aggregates are Provider, Tariff, Channel, Category, Admin and Account
// (with its subscriptions and devices). Each has a state type, a command
// interface implemented by one struct per intention (CreateAccount,
// UpdateAccount, AddSubscription, BindDevice, ...), its events in a
// separate file, and a constructor of its Decider (AccountDecider, ...).
// RegisterEvents registers every event with a Registry. Partial updates use
// Optional fields; decide functions report bad fields as a *ValidationError
// named by wire field names and return ErrNotFound, ErrAlreadyExists or
// ErrDeviceLimit (a *DeviceLimitError) for the other refusals.
package domain
