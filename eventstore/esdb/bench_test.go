package esdb_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
	"tvsm/eventstore/esdb/esdbdouble"
)

// BenchmarkAppend appends one event to a new stream per operation from
// b.RunParallel's goroutines (×4 with -cpu), on this backend against the
// protocol double and, as the reference measured in the same run, on the
// embedded store. Both wait for an fsync per acknowledged append (shared
// by concurrent ones); the esdb one adds a gRPC round trip on loopback.
//
//	go test -run '^$' -bench Append -cpu 4 -count 3 ./eventstore/esdb/
func BenchmarkAppend(b *testing.B) {
	stores := map[string]func(b *testing.B) eventstore.Store{
		"esdb-double": func(b *testing.B) eventstore.Store {
			return open(b, startDouble(b, esdbdouble.Options{}).URL())
		},
		"embedded": func(b *testing.B) eventstore.Store {
			s, err := embedded.Open(b.TempDir(), embedded.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			return s
		},
	}
	for _, name := range []string{"esdb-double", "embedded"} {
		b.Run(name, func(b *testing.B) {
			s := stores[name](b)
			b.SetParallelism(16)
			var n atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					ev := eventstore.EventData{ID: eventstore.DeriveEventID("bench", int(i)), Type: "Bench.v1", Data: []byte(`{"n":1}`)}
					if _, err := s.Append(context.Background(), fmt.Sprintf("bench-%d", i), eventstore.NoStream, ev); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
