package statstest

import (
	"context"
	"strings"

	"tvsm/projections/stats"
)

// Dump renders every fact a store answers over r, a line each
// (stats.Render, with the device class totals of each day of r), with
// the subscription rows' versions when versions is set.
func Dump(ctx context.Context, facts stats.FactStore, r stats.Range, versions bool) (string, error) {
	lines, err := stats.Render(ctx, facts, r, r, versions)
	if err != nil || len(lines) == 0 {
		return "", err
	}
	return strings.Join(lines, "\n") + "\n", nil
}
