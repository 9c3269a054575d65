package dispatch

import (
	"slices"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/wsgateway"
)

// BenchmarkRoundWant is the claim a node makes for a new provider-wide
// command without ttl: the round over 10,000 connections of the hub's list
// by provider, then the devices sorted.
func BenchmarkRoundWant(b *testing.B) {
	regs := make([]wsgateway.Registered, 10000)
	now := time.Now()
	for i := range regs {
		regs[i] = wsgateway.Registered{Device: int64(i*7919%100000 + 1), Account: int64(i), ConnectedAt: now.Add(-time.Minute)}
	}
	conns := slices.Values(regs)
	it := &item{index: 0, kind: domain.CommandUserMessage, start: now, claimed: map[int64]struct{}{}}
	for b.Loop() {
		want, _ := roundWant([]*item{it}, conns, len(regs), 0)
		sortDevices(want[0])
	}
}

func TestClaimPartsKeepEachAppendWithinItsBound(t *testing.T) {
	want := map[int][]int64{0: {1, 2, 3, 4, 5}, 1: {}, 2: {6, 7}}
	if parts := claimParts(want, 7); len(parts) != 1 {
		t.Fatalf("a round within the bound: %d parts, want 1", len(parts))
	}
	parts := claimParts(want, 3)
	wantParts := []map[int][]int64{{0: {1, 2, 3}}, {0: {4, 5}, 1: {}, 2: {6}}, {2: {7}}}
	if len(parts) != len(wantParts) {
		t.Fatalf("parts %v, want %v", parts, wantParts)
	}
	for i, p := range parts {
		if len(p) != len(wantParts[i]) {
			t.Fatalf("part %d: %v, want %v", i, p, wantParts[i])
		}
		for idx, devices := range wantParts[i] {
			got, ok := p[idx]
			if !ok || !slices.Equal(got, devices) || (got == nil) != (devices == nil) {
				t.Fatalf("part %d: %v, want %v", i, p, wantParts[i])
			}
		}
	}
}

func TestARoundWithALimitStopsBetweenDevices(t *testing.T) {
	now := time.Now()
	var regs []wsgateway.Registered
	for dev := int64(1); dev <= 5; dev++ {
		regs = append(regs, wsgateway.Registered{Device: dev, Account: dev, ConnectedAt: now.Add(-time.Minute)})
	}
	items := []*item{
		{index: 0, kind: domain.CommandUserMessage, start: now, claimed: map[int64]struct{}{}},
		{index: 1, kind: domain.CommandUserMessage, start: now, ttl: now.Add(time.Hour), claimed: map[int64]struct{}{2: {}}},
	}
	for _, c := range []struct {
		limit   int
		want    map[int][]int64
		partial bool
	}{
		// Device 1 is due for both commands, device 2 for the first only
		// (claimed for the second): a limit of 2 is reached after device
		// 1, one of 3 after device 2.
		{2, map[int][]int64{0: {1}, 1: {1}}, true},
		{3, map[int][]int64{0: {1, 2}, 1: {1}}, true},
		{9, map[int][]int64{0: {1, 2, 3, 4, 5}, 1: {1, 3, 4, 5}}, false},
		{0, map[int][]int64{0: {1, 2, 3, 4, 5}, 1: {1, 3, 4, 5}}, false},
	} {
		want, partial := roundWant(items, slices.Values(regs), len(regs), c.limit)
		if partial != c.partial || len(want) != len(c.want) {
			t.Fatalf("limit %d: %v, partial %v; want %v, partial %v", c.limit, want, partial, c.want, c.partial)
		}
		for idx, devices := range c.want {
			if !slices.Equal(want[idx], devices) {
				t.Fatalf("limit %d: %v, want %v", c.limit, want, c.want)
			}
		}
	}
}
