package query

import (
	"context"
	"errors"
	"fmt"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/internal/app"
)

// HistoryEntry is one change of an account: an event of its stream with
// who made it, when, in which request, and the fields it changed (values of
// secret fields withheld: pin_md5 shows only that it changed).
type HistoryEntry struct {
	Revision  uint64
	Type      string
	Summary   string // "account created", "subscription 7 ended", ...
	Time      time.Time
	Actor     string
	RequestID string
	Changes   []domain.FieldChange
}

// History returns every change of account id, oldest first, read from its
// stream in the event store (so it outlives the account: a deleted
// account's history is still there). It fails with domain.ErrNotFound when
// the account never existed and app.ErrForbidden when it belongs to a
// provider outside the caller's scope.
func (q *Accounts) History(ctx context.Context, c app.Caller, id int64) ([]HistoryEntry, error) {
	envs, err := q.r.envelopes(ctx, domain.AccountStream(id))
	if errors.Is(err, eventstore.ErrStreamNotFound) {
		return nil, fmt.Errorf("account %d: %w", id, domain.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	d := domain.AccountDecider()
	st := d.Initial()
	out := make([]HistoryEntry, 0, len(envs))
	for i, env := range envs {
		e := env.Event
		out = append(out, HistoryEntry{
			Revision:  uint64(i), // read from the start: revisions are dense
			Type:      e.EventType(),
			Summary:   domain.SummarizeAccountEvent(e),
			Time:      env.OccurredAt,
			Actor:     env.Actor.String(),
			RequestID: env.RequestID,
			Changes:   st.Diff(e),
		})
		st = d.Evolve(st, e)
		if i == 0 {
			// The provider is fixed at creation: check the scope as soon as
			// it is known, before decoding the rest.
			if st.Provider == 0 {
				return nil, fmt.Errorf("account %d: %w", id, domain.ErrNotFound)
			}
			if err := c.CheckScope(st.Provider); err != nil {
				return nil, fmt.Errorf("account %d: %w", id, err)
			}
		}
	}
	return out, nil
}
