package statstest

import (
	"context"
	"strings"

	"tvsm/projections/stats"
)

// Dump renders every fact a store answers over r, a line each
// (stats.Render), with the subscription rows' versions when versions is
// set: the subscription rows, the device class totals over r and those of
// each day from the first to the last subscription row, and the account
// totals. A device class fact on a day outside those rows still shows in
// the totals over r; asking each day of a range of years would cost a
// query a day, thousands on ClickHouse, to find nothing.
func Dump(ctx context.Context, facts stats.FactStore, r stats.Range, versions bool) (string, error) {
	days := stats.Range{From: r.To, To: r.From, Provider: r.Provider} // none until a row is seen
	err := facts.SubscriptionDays(ctx, r, func(row stats.SubscriptionDay) error {
		days.From, days.To = min(days.From, row.Day), max(days.To, row.Day)
		return nil
	})
	if err != nil {
		return "", err
	}
	if days.From > days.To {
		days = stats.Range{From: r.To + 1, To: r.To, Provider: r.Provider}
	}
	lines, err := stats.Render(ctx, facts, r, days, versions)
	if err != nil || len(lines) == 0 {
		return "", err
	}
	return strings.Join(lines, "\n") + "\n", nil
}
