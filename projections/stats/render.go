package stats

import (
	"context"
	"fmt"

	"tvsm/projections"
)

// AllDays are the days a fact store can hold: 1970-01-01 to 2105-12-31,
// what a ClickHouse Date holds.
var AllDays = Range{From: 0, To: 49672}

// Render renders every answer facts gives over r, a line each: the
// subscription rows (with their versions when versions is set), the
// device class totals of r and of each day of days, and the account
// totals. Two stores that answer alike render alike, so the statistics a
// node serves can be compared with statistics rebuilt from the log.
func Render(ctx context.Context, facts FactStore, r, days Range, versions bool) ([]string, error) {
	var lines []string
	err := facts.SubscriptionDays(ctx, r, func(row SubscriptionDay) error {
		if !versions {
			row.Version = 0
		}
		lines = append(lines, fmt.Sprintf("%+v", row))
		return nil
	})
	if err != nil {
		return nil, err
	}
	if days != r {
		classes, err := facts.DeviceClassTotals(ctx, r)
		if err != nil {
			return nil, err
		}
		lines = append(lines, fmt.Sprintf("%v..%v %+v", r.From, r.To, classes))
	}
	for d := days.From; d <= days.To; d++ {
		classes, err := facts.DeviceClassTotals(ctx, Range{From: d, To: d, Provider: days.Provider})
		if err != nil {
			return nil, err
		}
		if len(classes) > 0 {
			lines = append(lines, fmt.Sprintf("%v %+v", d, classes))
		}
	}
	err = facts.AccountChannelTotals(ctx, r, func(t AccountChannelTotal) error {
		lines = append(lines, fmt.Sprintf("%+v", t))
		return nil
	})
	return lines, err
}

// DiffLines compares two renderings (Render) of the live statistics and
// of a rebuild, as projections.Differences does: at most limit lines and
// the number of lines that differ.
func DiffLines(live, rebuilt []string, limit int) (lines []string, total int) {
	return projections.Differences(len(live), len(rebuilt),
		func(i, j int) bool { return live[i] == rebuilt[j] },
		func(second bool, i int) string {
			if second {
				return rebuilt[i]
			}
			return live[i]
		}, limit)
}
