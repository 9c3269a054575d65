package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/internal/app"
	"tvsm/projections/readmodel"
)

// Export is everything tvsm holds about one subscriber (GET
// /api/provider/accounts/{id}/export): the account as it is now, its
// history, every event of its stream and of its devices' streams (their
// connections and logins), its devices, subscriptions and networks, and
// what became of the commands sent to its devices. An erased account's
// personal values read as "erased" in all of it.
type Export struct {
	// Account is nil once the account is deleted or erased.
	Account       *AccountView
	History       []HistoryEntry
	Events        []ExportedEvent
	Devices       []readmodel.Device
	Subscriptions []readmodel.Subscription
	Networks      []readmodel.AccountNetwork
	Receipts      []ExportedReceipt
}

// ExportedEvent is one stored event of the subscriber, as stored.
type ExportedEvent struct {
	Stream    string
	Revision  uint64
	Type      string
	Time      time.Time
	Actor     string
	RequestID string
	Data      json.RawMessage
}

// ExportedReceipt is one command of a send that reached one of the
// subscriber's devices.
type ExportedReceipt struct {
	SendID  int64
	Index   int
	Kind    domain.CommandKind
	Receipt DeviceReceipt
}

// Export returns everything about account id. It fails with
// domain.ErrNotFound when the account never existed and app.ErrForbidden
// outside the caller's scope.
func (q *Accounts) Export(ctx context.Context, c app.Caller, id int64) (Export, error) {
	history, err := q.History(ctx, c, id)
	if err != nil {
		return Export{}, err
	}
	out := Export{History: history}
	if a, ok := q.r.cfg.Model.Account(id); ok {
		v := q.view(a, q.r.now())
		out.Account = &v
	}
	acc, err := q.r.rec.Store.ReadStream(ctx, domain.AccountStream(id), eventstore.Start, 0)
	if err != nil {
		return Export{}, err
	}
	devices := map[int64]bool{}
	var provider int64
	for _, rec := range acc {
		e, err := q.r.cfg.Registry.Decode(rec.Type, rec.Data)
		if err != nil {
			return Export{}, fmt.Errorf("account %d: %w", id, err)
		}
		switch e := e.(type) {
		case domain.AccountCreated:
			provider = e.Provider
		case domain.DeviceBound:
			devices[e.DeviceID] = true
		}
	}
	out.Events = exportedEvents(acc)
	for _, dev := range slices.Sorted(maps.Keys(devices)) {
		recs, err := q.r.rec.Store.ReadStream(ctx, domain.DeviceStream(dev), eventstore.Start, 0)
		if errors.Is(err, eventstore.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return Export{}, err
		}
		out.Events = append(out.Events, exportedEvents(recs)...)
	}
	m := q.r.cfg.Model
	out.Devices = m.AccountDevices(id)
	out.Subscriptions = m.AccountSubscriptions(id)
	nets, err := m.ListNetworks(readmodel.NetworkQuery{Scope: readmodel.AllProviders, Account: id})
	if err != nil {
		return Export{}, err
	}
	out.Networks = slices.Collect(nets.Items)
	if out.Receipts, err = q.receipts(ctx, c, provider, devices); err != nil {
		return Export{}, err
	}
	return out, nil
}

// receipts returns the commands of the sends the caller may see that
// reached one of devices.
func (q *Accounts) receipts(ctx context.Context, c app.Caller, provider int64, devices map[int64]bool) ([]ExportedReceipt, error) {
	if len(devices) == 0 {
		return nil, nil
	}
	scope := readmodel.ScopeOf(provider, c.Scope != nil)
	sends, err := q.r.cfg.Model.ListSends(readmodel.SendQuery{Scope: scope})
	if err != nil {
		return nil, err
	}
	var out []ExportedReceipt
	for id := range sends.Items {
		v, err := (&Sends{r: q.r}).fold(ctx, id)
		if err != nil {
			return nil, err
		}
		for _, cmd := range v.Commands {
			for _, r := range cmd.Receipts {
				if devices[r.Device] {
					out = append(out, ExportedReceipt{SendID: v.SendID, Index: cmd.Index, Kind: cmd.Command.Kind, Receipt: r})
				}
			}
		}
	}
	return out, nil
}

func exportedEvents(recs []eventstore.RecordedEvent) []ExportedEvent {
	out := make([]ExportedEvent, len(recs))
	for i, rec := range recs {
		out[i] = ExportedEvent{Stream: rec.Stream, Revision: rec.Revision, Type: rec.Type, Time: rec.Created, Data: json.RawMessage(rec.Data)}
		if md, err := domain.DecodeMetadata(rec.Metadata); err == nil {
			out[i].Actor, out[i].RequestID = md.Actor.String(), md.RequestID
			if !md.OccurredAt.IsZero() {
				out[i].Time = md.OccurredAt
			}
		}
	}
	return out
}
