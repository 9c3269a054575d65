package query

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/internal/app"
	"tvsm/projections/readmodel"
)

// Sends answers the reads of command sends.
type Sends struct{ r *reader }

// Receipts returns send id with what became of each of its commands on each
// device, folded (FoldSend) from command-{id} and receipt-{id} at the
// queries' time. A send is shown to superadmins and to the admins of its
// scope's provider: app.ErrForbidden for others, as other Provider API
// reads answer; domain.ErrNotFound when there is no such send.
func (q *Sends) Receipts(ctx context.Context, c app.Caller, id int64) (SendView, error) {
	v, err := q.fold(ctx, id)
	if err != nil {
		return SendView{}, err
	}
	if c.Scope != nil && (v.Scope == nil || *v.Scope != *c.Scope) {
		return SendView{}, fmt.Errorf("send %d: %w", id, app.ErrForbidden)
	}
	return v, nil
}

// List returns a page of the sends the caller may see (a provider-scoped
// admin: its provider's; a superadmin: all), each as Receipts shows it but
// without the per-device receipts (the counts stay).
func (q *Sends) List(ctx context.Context, c app.Caller, p readmodel.Page) (readmodel.List[SendView], error) {
	l, err := q.r.cfg.Model.ListSends(readmodel.SendQuery{Scope: listScope(c), Page: p})
	if err != nil {
		return readmodel.List[SendView]{}, listError(err)
	}
	ids := l.Slice()
	views := make([]SendView, 0, len(ids))
	for _, id := range ids {
		v, err := q.fold(ctx, id)
		if err != nil {
			return readmodel.List[SendView]{}, err
		}
		for i := range v.Commands {
			v.Commands[i].Receipts = nil
		}
		views = append(views, v)
	}
	return readmodel.List[SendView]{Total: l.Total, Items: slices.Values(views)}, nil
}

// fold reads send id's streams and folds them at the queries' time.
func (q *Sends) fold(ctx context.Context, id int64) (SendView, error) {
	// Receipts first: a receipt read then had its delivery recorded before
	// it, so the command stream read after shows the delivery too.
	receipts, err := q.r.envelopes(ctx, domain.ReceiptStream(id))
	if err != nil && !errors.Is(err, eventstore.ErrStreamNotFound) {
		return SendView{}, err
	}
	events, err := q.r.envelopes(ctx, domain.CommandStream(id))
	if errors.Is(err, eventstore.ErrStreamNotFound) {
		return SendView{}, fmt.Errorf("send %d: %w", id, domain.ErrNotFound)
	}
	if err != nil {
		return SendView{}, err
	}
	v, err := FoldSend(append(events, receipts...), q.r.now())
	if err != nil {
		return SendView{}, fmt.Errorf("send %d: %w", id, err)
	}
	return v, nil
}
