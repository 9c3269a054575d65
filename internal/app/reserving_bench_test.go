package app

import (
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
)

// BenchmarkExecuteReserving: 64 goroutines each create a new counter
// together with the reservation of its name, in one atomic append (the
// account-create path).
func BenchmarkExecuteReserving(b *testing.B) {
	const workers = 64
	e := newEnv(b)
	x := e.executor(nil, Options{})
	m := meta("bench")
	m.NewStream = true
	var n atomic.Int64
	groups0, appends0 := e.stats()
	b.ReportAllocs()
	runWorkers(b, workers, func(int) error {
		id := strconv.FormatInt(n.Add(1), 10)
		_, handled, err := creating(e, x, LegacyLoginStream(1, "user"+id), "counter-"+id, m)
		if err == nil && !handled {
			return errors.New("the create was not handled")
		}
		return err
	})
	if groups, appends := e.stats(); groups > groups0 {
		b.ReportMetric(float64(appends-appends0)/float64(groups-groups0), "appends/fsync")
	}
}
