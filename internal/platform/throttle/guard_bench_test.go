package throttle

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tvsm/internal/testkit/testutil"
)

// BenchmarkGuardBurstFromOneAddress: first logins of many devices behind
// one address (set-top boxes behind a NAT starting together), all waiting
// for the address's AddressLimit attempts in flight, each of which takes a
// millisecond (its check). The CPU an attempt costs (cpu-ns/op, the
// process's user and system time) must not grow with the number waiting: a
// finished attempt hands its room to the next waiter instead of waking them
// all.
func BenchmarkGuardBurstFromOneAddress(b *testing.B) {
	for _, waiting := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("waiting=%d", waiting), func(b *testing.B) {
			g := NewGuard(GuardOptions{AddressLimit: 20, MaxWait: time.Hour, MaxKeys: 1 << 20})
			var next, refused atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			cpu := testutil.ProcessCPU(b)
			for range waiting {
				wg.Go(func() {
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						a, _, ok := g.Begin(context.Background(), fmt.Sprint("box", i), "198.51.100.7")
						if !ok {
							refused.Add(1)
							continue
						}
						time.Sleep(time.Millisecond) // the check
						a.Succeeded()
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(testutil.ProcessCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
			if n := refused.Load(); n > 0 {
				b.Fatalf("%d attempts refused, want none (MaxWait is an hour)", n)
			}
		})
	}
}
