package command

import (
	"context"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/record"
)

// loadAccount folds an account stream read from the store; found is false
// when the stream has no events.
func (w *writer) loadAccount(ctx context.Context, stream string) (domain.Account, bool, error) {
	d := domain.AccountDecider()
	st, head, err := record.Fold(ctx, w.rec, stream, record.Head{}, d.Initial(),
		func(st domain.Account, e domain.Event, _ eventstore.RecordedEvent) (domain.Account, error) {
			return d.Evolve(st, e), nil
		})
	if err != nil {
		return domain.Account{}, false, err
	}
	return st, head.Exists, nil
}
