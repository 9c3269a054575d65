package readmodel

import (
	"testing"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/projections"
)

// BenchmarkApply reports how fast the model applies a log of typical
// accounts through Apply (JSON decoding included), in events per second:
// the speed of a rebuild without a snapshot.
func BenchmarkApply(b *testing.B) {
	const n = 100_000
	f := newFeed()
	var events []eventstore.RecordedEvent
	for id := int64(1); id <= n; id++ {
		for _, e := range typicalAccount(id, id%10+1) {
			events = append(events, f.record(domain.AccountStream(id), e, base))
		}
	}
	for b.Loop() {
		m := New(nil)
		for i := 0; i < len(events); i += 4096 {
			if err := m.Apply(b.Context(), decoded(m, events[i:min(i+4096, len(events))]), projections.Replay); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(events)*b.N)/b.Elapsed().Seconds(), "events/s")
}
