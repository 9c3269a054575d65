package readmodel

import (
	"runtime"
	"testing"
)

// maxBytesPerAccount is the read model's memory budget per account.
const maxBytesPerAccount = 1024

// heapPerAccount returns the heap the model that build fills takes, per
// account: the live heap after GC with the model, minus before it.
func heapPerAccount(n int, build func(m *Model)) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	m := New(nil)
	build(m)
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(m)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
}

// TestMemoryPerAccount builds 10,000 typical accounts through Apply and
// checks the read model stays within its budget per account. The
// million-account figure comes from BenchmarkMemoryPerAccount.
func TestMemoryPerAccount(t *testing.T) {
	const n = 10000
	perAccount := heapPerAccount(n, func(m *Model) { applyTypical(t, m, newFeed(), n, 10) })
	t.Logf("%d accounts: %.0f bytes per account", n, perAccount)
	if perAccount > maxBytesPerAccount {
		t.Errorf("%.0f bytes per account, budget %d", perAccount, maxBytesPerAccount)
	}
}

// BenchmarkMemoryPerAccount reports the heap per account of a model of
// 1,000,000 typical accounts (10 providers), built with the same state
// changes as Apply (without the JSON decoding). Run it once:
//
//	go test -run '^$' -bench MemoryPerAccount -benchtime 1x ./projections/readmodel/
func BenchmarkMemoryPerAccount(b *testing.B) {
	const n = 1_000_000
	for b.Loop() {
		perAccount := heapPerAccount(n, func(m *Model) { buildTypical(m, n, 10) })
		b.ReportMetric(perAccount, "B/account")
		if perAccount > maxBytesPerAccount {
			b.Errorf("%.0f bytes per account, budget %d", perAccount, maxBytesPerAccount)
		}
	}
}
