package statstest

import (
	"context"
	"fmt"
	"strings"

	"tvsm/projections/stats"
)

// Dump renders every fact a store answers over r: subscription rows (with
// their versions when versions is set), each day's device class totals and
// the account totals. Two stores that answer alike over r render alike, so
// a store can be compared with one rebuilt from the log.
func Dump(ctx context.Context, facts stats.FactStore, r stats.Range, versions bool) (string, error) {
	rows, err := stats.AllSubscriptionDays(ctx, facts, r)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, row := range rows {
		if !versions {
			row.Version = 0
		}
		fmt.Fprintf(&b, "%+v\n", row)
	}
	for d := r.From; d <= r.To; d++ {
		classes, err := facts.DeviceClassTotals(ctx, stats.Range{From: d, To: d})
		if err != nil {
			return "", err
		}
		if len(classes) > 0 {
			fmt.Fprintf(&b, "%v %+v\n", d, classes)
		}
	}
	err = facts.AccountChannelTotals(ctx, r, func(t stats.AccountChannelTotal) error {
		fmt.Fprintf(&b, "%+v\n", t)
		return nil
	})
	return b.String(), err
}
