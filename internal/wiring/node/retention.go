package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"tvsm/domain"
	"tvsm/internal/app"
	"tvsm/internal/platform/schedule"
)

// DefaultRetentionSpec is when the retention job runs: daily, 03:00 UTC.
const DefaultRetentionSpec = "0 3 * * *"

// retentionBatch bounds how many accounts one look at the read model
// hands the job.
const retentionBatch = 500

// scheduleRetention runs the retention rule (Options.EraseDeletedAfter)
// daily on every node. Erasing is idempotent, so nodes that overlap only
// repeat each other's work.
func (n *Node) scheduleRetention(_ context.Context, opts Options) error {
	if opts.EraseDeletedAfter <= 0 {
		return nil
	}
	spec := cmp.Or(opts.RetentionSpec, DefaultRetentionSpec)
	c := schedule.NewCron(n.log)
	if _, err := c.AddFunc(spec, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Hour)
		defer cancel()
		before := opts.Clock().Add(-opts.EraseDeletedAfter)
		erased, err := n.EraseDeletedBefore(ctx, before)
		if err != nil {
			n.log.Error("retention: erasing deleted accounts failed; the next run goes on", "erased", erased, "error", err)
			return
		}
		n.log.Info("retention: erased deleted accounts", "erased", erased, "deleted_before", before.UTC().Format(time.RFC3339))
	}); err != nil {
		return fmt.Errorf("retention schedule %q: %w", spec, err)
	}
	c.Start()
	n.cleanup.push(func() { <-c.Stop().Done() })
	return nil
}

// EraseDeletedBefore erases the personal data of every account deleted
// before t and not erased yet, as POST /accounts/{id}/erase would, and
// returns how many it erased. An account another node erased meanwhile
// is passed over.
func (n *Node) EraseDeletedBefore(ctx context.Context, t time.Time) (int, error) {
	caller := app.Caller{System: true, RequestID: "retention"}
	seen := make(map[int64]bool)
	erased := 0
	for {
		fresh := 0
		for _, id := range n.Model.DeletedBefore(t, retentionBatch+len(seen)) {
			if seen[id] {
				continue // erased, and the read model has not caught up yet
			}
			seen[id] = true
			fresh++
			err := n.Commands.Accounts.Erase(ctx, caller, id, true)
			switch {
			case errors.Is(err, domain.ErrNotFound):
			case err != nil:
				return erased, fmt.Errorf("account %d: %w", id, err)
			default:
				erased++
			}
		}
		if fresh == 0 {
			return erased, nil
		}
	}
}
