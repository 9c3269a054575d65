package query

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/record"
	"tvsm/internal/app"
)

// Limits of the change feed.
const (
	// DefaultChangesLimit is the page size of a change feed call without one.
	DefaultChangesLimit = 100
	// MaxChangesLimit is the largest page a change feed call returns.
	MaxChangesLimit = 1000
	// changesMaxScan bounds the events one call looks at, so that a
	// provider-scoped admin far behind in a log full of other providers'
	// changes gets an answer (maybe empty, with a later next) promptly.
	changesMaxScan = 20000
	// changesWait bounds how long one call waits for the log.
	changesWait = 3 * time.Second
)

// Entities of the change feed.
const (
	EntityAccount      = "account"
	EntitySubscription = "subscription"
	EntityDevice       = "device"
	EntityProvider     = "provider"
	EntityTariff       = "tariff"
	EntityChannel      = "channel"
	EntityCategory     = "category"
	EntityTariffTag    = "tariff_tag"
	EntityRegion       = "region"
	EntityDeviceType   = "device_type"
)

// Change is one entry of the change feed: an event that changed an entity
// the Provider API shows, at its log position.
type Change struct {
	Position eventstore.Position
	Entity   string // one of the Entity* constants
	ID       int64
	// Account is the account of a subscription or device; 0 otherwise.
	Account int64
	Type    string
	Time    time.Time // zero if the event's metadata is unreadable
}

// ChangePage is one call's worth of the change feed.
type ChangePage struct {
	Changes []Change
	// Next is the position to pass as after in the next call: the last
	// change returned, or further when the log was read past changes the
	// caller may not see. It equals the call's after when nothing new was
	// found.
	Next eventstore.Position
}

// feedKinds maps stream prefixes to the entity their events change.
var feedKinds = []struct {
	prefix string
	entity string
}{
	{feedStreamPrefix(domain.AccountStream), EntityAccount},
	{feedStreamPrefix(domain.ProviderStream), EntityProvider},
	{feedStreamPrefix(domain.TariffStream), EntityTariff},
	{feedStreamPrefix(domain.ChannelStream), EntityChannel},
	{feedStreamPrefix(domain.CategoryStream), EntityCategory},
	{feedStreamPrefix(domain.TariffTagStream), EntityTariffTag},
	{feedStreamPrefix(domain.RegionStream), EntityRegion},
	{feedStreamPrefix(domain.DeviceTypeStream), EntityDeviceType},
}

// feedStreamPrefix returns what a stream name function puts before the id.
func feedStreamPrefix(stream func(int64) string) string { return strings.TrimSuffix(stream(0), "0") }

// feedFilter selects the streams of the entities of the feed; admins
// and the application's bookkeeping streams are not among them.
func feedFilter() eventstore.Filter {
	f := eventstore.Filter{}
	for _, k := range feedKinds {
		f.StreamPrefixes = append(f.StreamPrefixes, k.prefix)
	}
	return f
}

// Changes answers the change feed: what changed in the log, for
// incremental sync.
type Changes struct{ r *reader }

// After returns up to limit changes after the log position after (the
// beginning for the zero position), in log order, that the caller may see:
// a provider-scoped admin sees its provider, its tariffs, tariff tags and
// accounts (with their subscriptions and devices), and the channels,
// categories, regions and device types everyone shares. It returns once it has limit changes, has reached the
// end of the log, or has waited a few seconds; it never waits for new
// changes. limit <= 0 means DefaultChangesLimit; it is capped at
// MaxChangesLimit.
func (q *Changes) After(ctx context.Context, c app.Caller, after eventstore.Position, limit int) (ChangePage, error) {
	if limit <= 0 {
		limit = DefaultChangesLimit
	}
	limit = min(limit, MaxChangesLimit)
	wctx, cancel := context.WithTimeout(ctx, changesWait)
	defer cancel()
	sub, err := q.r.cfg.Store.SubscribeAll(wctx, after, feedFilter())
	if err != nil {
		return ChangePage{}, err
	}
	defer sub.Close()

	page := ChangePage{Next: after}
	owners := feedOwners{r: q.r, known: map[string]int64{}}
	scanned := 0
	for {
		b, err := sub.Recv(wctx)
		if err != nil {
			if ctx.Err() == nil && errors.Is(wctx.Err(), context.DeadlineExceeded) {
				return page, nil // waited enough: answer what there is
			}
			return ChangePage{}, err
		}
		for _, rec := range b.Events {
			ch, ok := feedChange(q.r.cfg.Registry, rec)
			if ok && c.Scope != nil {
				if ok, err = owners.visible(wctx, c, rec, ch); err != nil {
					if ctx.Err() == nil && errors.Is(wctx.Err(), context.DeadlineExceeded) {
						return page, nil
					}
					return ChangePage{}, err
				}
			}
			if ok {
				page.Changes = append(page.Changes, ch)
			}
			page.Next = rec.Position
			scanned++
			if len(page.Changes) >= limit || scanned >= changesMaxScan {
				return page, nil
			}
		}
		if b.Checkpoint.After(page.Next) {
			page.Next = b.Checkpoint
		}
		if b.CaughtUp {
			return page, nil
		}
	}
}

// feedChange describes a recorded event; ok is false for streams outside the
// feed and for journal events (domain.IsJournalEvent: billing calls), which
// change nothing a sync job reads, so they do not make it re-fetch the account.
func feedChange(reg *domain.Registry, rec eventstore.RecordedEvent) (Change, bool) {
	if domain.IsJournalEvent(rec.Type) {
		return Change{}, false
	}
	for _, k := range feedKinds {
		rest, found := strings.CutPrefix(rec.Stream, k.prefix)
		if !found {
			continue
		}
		id, err := strconv.ParseInt(rest, 10, 64)
		if err != nil {
			return Change{}, false
		}
		ch := Change{Position: rec.Position, Entity: k.entity, ID: id, Type: rec.Type}
		if md, err := domain.DecodeMetadata(rec.Metadata); err == nil {
			ch.Time = md.OccurredAt
		}
		if k.entity == EntityAccount {
			feedItemChange(reg, rec, &ch)
		}
		return ch, true
	}
	return Change{}, false
}

// feedItemChange turns an account stream's subscription and device
// events into changes of those entities.
func feedItemChange(reg *domain.Registry, rec eventstore.RecordedEvent, ch *Change) {
	e, err := reg.Decode(rec.Type, rec.Data)
	if err != nil {
		return // an event this node does not know: reported as an account change
	}
	switch e := e.(type) {
	case domain.SubscriptionAdded:
		ch.Entity, ch.ID, ch.Account = EntitySubscription, e.SubscriptionID, e.AccountID
	case domain.SubscriptionChanged:
		ch.Entity, ch.ID, ch.Account = EntitySubscription, e.SubscriptionID, e.AccountID
	case domain.SubscriptionRemoved:
		ch.Entity, ch.ID, ch.Account = EntitySubscription, e.SubscriptionID, e.AccountID
	case domain.DeviceBound:
		ch.Entity, ch.ID, ch.Account = EntityDevice, e.DeviceID, e.AccountID
	case domain.DeviceUnbound:
		ch.Entity, ch.ID, ch.Account = EntityDevice, e.DeviceID, e.AccountID
	}
}

// feedOwners finds the provider of the streams of one feed call, for a
// provider-scoped caller.
type feedOwners struct {
	r     *reader
	known map[string]int64 // stream → provider (0: none)
}

// visible reports whether a scoped caller may see change ch of rec.
func (o *feedOwners) visible(ctx context.Context, c app.Caller, rec eventstore.RecordedEvent, ch Change) (bool, error) {
	switch {
	case strings.HasPrefix(rec.Stream, feedStreamPrefix(domain.ChannelStream)),
		strings.HasPrefix(rec.Stream, feedStreamPrefix(domain.CategoryStream)),
		strings.HasPrefix(rec.Stream, feedStreamPrefix(domain.RegionStream)),
		strings.HasPrefix(rec.Stream, feedStreamPrefix(domain.DeviceTypeStream)):
		return true, nil // shared by every provider
	case strings.HasPrefix(rec.Stream, feedStreamPrefix(domain.ProviderStream)):
		return c.Allows(ch.ID), nil
	}
	p, err := o.provider(ctx, rec.Stream)
	if err != nil {
		return false, err
	}
	return p != 0 && c.Allows(p), nil
}

// provider returns the provider an account, tariff or tariff tag stream
// belongs to: from the read model when it has it, else from the stream's
// first event (the feed may be ahead of the read model, and deleted
// tariffs and tags leave it).
func (o *feedOwners) provider(ctx context.Context, stream string) (int64, error) {
	if p, ok := o.known[stream]; ok {
		return p, nil
	}
	var p int64
	if ref, ok := domain.ParseStream(stream); ok {
		m := o.r.cfg.Model
		switch ref.Kind {
		case domain.StreamAccount:
			p, _ = m.AccountOwner(ref.ID)
		case domain.StreamTariff:
			t, _ := m.Tariff(ref.ID)
			p = t.Provider
		case domain.StreamTariffTag:
			t, _ := m.TariffTag(ref.ID)
			p = t.Provider
		}
	}
	if p == 0 {
		// An undecodable first event names no provider; it is not an error.
		e, _, _, err := record.First(ctx, o.r.rec, stream)
		var undecodable *record.DecodeError
		if err != nil && !errors.As(err, &undecodable) {
			return 0, err
		}
		switch e := e.(type) {
		case domain.AccountCreated:
			p = e.Provider
		case domain.TariffCreated:
			p = e.Provider
		case domain.TariffTagCreated:
			p = e.Provider
		}
	}
	o.known[stream] = p
	return p, nil
}
