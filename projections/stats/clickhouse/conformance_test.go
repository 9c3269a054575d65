package clickhouse_test

import (
	"testing"

	"tvsm/projections/stats"
	"tvsm/projections/stats/statstest"
)

func TestConformance(t *testing.T) {
	statstest.Run(t, func(t *testing.T) stats.FactStore { return newStore(t) })
}

func TestReplacer(t *testing.T) {
	statstest.RunReplacer(t, func(t *testing.T) stats.Replacer { return newStore(t) })
}
