package schedule

import (
	"context"
	"time"
)

// Sleep waits for d or until ctx is done, whichever comes first, and
// reports whether it slept the whole d.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
