package statstest

import "tvsm/projections/stats"

// Days of the cases.
var (
	d1 = D("2026-01-30")
	d2 = D("2026-01-31")
	d3 = D("2026-02-01")
	d4 = D("2026-02-02")
)

func row(d stats.Day, provider, tariff, enabled, devices, active, disabled, withDevices int64, version uint64) stats.SubscriptionDay {
	return stats.SubscriptionDay{Day: d, Provider: provider, Tariff: tariff, Enabled: enabled, EnabledDevices: devices,
		Active: active, Disabled: disabled, EnabledWithDevices: withDevices, Version: version}
}

// The viewing of the viewing cases. Provider 1: account 100 with an stb
// (1000) and a phone (1001), account 101 with an stb (1002). Provider 2:
// account 200 with a web player (2000). The phone watched on d1 although
// its class is first seen on d2 (a fact store takes facts as given).
var (
	v1 = fact(d1, 1, 100, 1000, "stb", 7, true, 600, 10, 0)
	v2 = fact(d1, 1, 100, 1000, "stb", 8, false, 120, 10, 1)
	v3 = fact(d1, 1, 100, 1001, "phone", 7, true, 30, 11, 0)
	v4 = fact(d2, 1, 100, 1001, "phone", 7, true, 90, 12, 0)
	v5 = fact(d2, 1, 101, 1002, "stb", 7, false, 3600, 13, 0)
	v6 = fact(d3, 1, 101, 1002, "stb", 7, true, 45, 14, 0)
	v7 = fact(d1, 2, 200, 2000, "web", 9, true, 300, 15, 0)
	v8 = fact(d3, 2, 200, 2000, "web", 9, true, 60, 16, 2)

	seenRows = []stats.DeviceClassSeen{
		{Provider: 1, Class: "stb", Day: d1},
		{Provider: 1, Class: "phone", Day: d2},
		{Provider: 1, Class: "tv", Day: d3}, // seen, never used to watch
		{Provider: 2, Class: "web", Day: d1},
	}
)

var cases = []testCase{
	{
		name: "EmptyStore",
		checks: []check{
			wantSubs(stats.Range{From: d1, To: d4}),
			wantSubs(stats.Range{From: d1, To: d4, Provider: 1}),
			wantClasses(stats.Range{From: d1, To: d4}),
			wantAccounts(stats.Range{From: d1, To: d4}),
			wantActive(1, d1),
		},
	},
	{
		name: "SubscriptionDaysOrderedAndFiltered",
		writes: []write{
			subs(row(d2, 2, 20, 1, 1, 0, 0, 1, 5), row(d2, 1, 11, 4, 6, 2, 1, 3, 5)),
			subs(row(d1, 1, 11, 3, 5, 1, 0, 2, 3), row(d1, 1, 10, 9, 9, 9, 9, 9, 3), row(d3, 1, 10, 1, 0, 0, 0, 0, 7)),
		},
		checks: []check{
			wantSubs(stats.Range{From: d1, To: d3},
				row(d1, 1, 10, 9, 9, 9, 9, 9, 3), row(d1, 1, 11, 3, 5, 1, 0, 2, 3), row(d2, 1, 11, 4, 6, 2, 1, 3, 5),
				row(d3, 1, 10, 1, 0, 0, 0, 0, 7), row(d2, 2, 20, 1, 1, 0, 0, 1, 5)),
			// Both ends of the range are included.
			wantSubs(stats.Range{From: d2, To: d3},
				row(d2, 1, 11, 4, 6, 2, 1, 3, 5), row(d3, 1, 10, 1, 0, 0, 0, 0, 7), row(d2, 2, 20, 1, 1, 0, 0, 1, 5)),
			wantSubs(stats.Range{From: d2, To: d2, Provider: 1}, row(d2, 1, 11, 4, 6, 2, 1, 3, 5)),
			wantSubs(stats.Range{From: d1, To: d4, Provider: 2}, row(d2, 2, 20, 1, 1, 0, 0, 1, 5)),
			wantSubs(stats.Range{From: d1, To: d4, Provider: 3}),
			wantSubs(stats.Range{From: d4, To: d4}),
		},
	},
	{
		name: "SubscriptionDaysHigherVersionWins",
		writes: []write{
			subs(row(d1, 1, 10, 5, 5, 5, 5, 5, 10)),
			subs(row(d1, 1, 10, 6, 6, 6, 6, 6, 20)), // newer: replaces
			subs(row(d1, 1, 10, 7, 7, 7, 7, 7, 15)), // older: ignored
			subs(row(d1, 1, 10, 6, 6, 6, 6, 6, 20)), // the same again: one row
			// Within one call the higher version wins whatever the order.
			subs(row(d2, 1, 10, 2, 0, 0, 0, 0, 30), row(d2, 1, 10, 1, 0, 0, 0, 0, 25)),
			subs(row(d3, 1, 10, 1, 0, 0, 0, 0, 25), row(d3, 1, 10, 2, 0, 0, 0, 0, 30)),
		},
		checks: []check{
			wantSubs(stats.Range{From: d1, To: d3},
				row(d1, 1, 10, 6, 6, 6, 6, 6, 20), row(d2, 1, 10, 2, 0, 0, 0, 0, 30), row(d3, 1, 10, 2, 0, 0, 0, 0, 30)),
		},
	},
	{
		name:   "DeviceClassTotals",
		writes: []write{seen(seenRows...), viewing(v1, v2, v3, v4, v5, v6, v7, v8)},
		checks: []check{
			wantClasses(stats.Range{From: d1, To: d3},
				stats.DeviceClassTotal{Provider: 1, Class: "phone", LiveSeconds: 120, UniqueDevices: 1},
				stats.DeviceClassTotal{Provider: 1, Class: "stb", LiveSeconds: 645, DVRSeconds: 3720, UniqueDevices: 2},
				stats.DeviceClassTotal{Provider: 1, Class: "tv"},
				stats.DeviceClassTotal{Provider: 2, Class: "web", LiveSeconds: 360, UniqueDevices: 1}),
			// phone is first seen on d2 and tv on d3: left out before.
			wantClasses(stats.Range{From: d1, To: d1},
				stats.DeviceClassTotal{Provider: 1, Class: "stb", LiveSeconds: 600, DVRSeconds: 120, UniqueDevices: 1},
				stats.DeviceClassTotal{Provider: 2, Class: "web", LiveSeconds: 300, UniqueDevices: 1}),
			// A class seen before the range has a row even with no viewing.
			wantClasses(stats.Range{From: d4, To: d4, Provider: 1},
				stats.DeviceClassTotal{Provider: 1, Class: "phone"},
				stats.DeviceClassTotal{Provider: 1, Class: "stb"},
				stats.DeviceClassTotal{Provider: 1, Class: "tv"}),
			wantClasses(stats.Range{From: d2, To: d2, Provider: 1},
				stats.DeviceClassTotal{Provider: 1, Class: "phone", LiveSeconds: 90, UniqueDevices: 1},
				stats.DeviceClassTotal{Provider: 1, Class: "stb", DVRSeconds: 3600, UniqueDevices: 1}),
			wantClasses(stats.Range{From: d1, To: d4, Provider: 3}),
		},
	},
	{
		name:   "AccountChannelTotals",
		writes: []write{seen(seenRows...), viewing(v8, v7, v6, v5), viewing(v4, v3, v2, v1)},
		checks: []check{
			wantAccounts(stats.Range{From: d1, To: d3},
				stats.AccountChannelTotal{Provider: 1, Account: 100, Channel: 7, LiveSeconds: 720},
				stats.AccountChannelTotal{Provider: 1, Account: 100, Channel: 8, DVRSeconds: 120},
				stats.AccountChannelTotal{Provider: 1, Account: 101, Channel: 7, LiveSeconds: 45, DVRSeconds: 3600},
				stats.AccountChannelTotal{Provider: 2, Account: 200, Channel: 9, LiveSeconds: 360}),
			wantAccounts(stats.Range{From: d2, To: d3, Provider: 1},
				stats.AccountChannelTotal{Provider: 1, Account: 100, Channel: 7, LiveSeconds: 90},
				stats.AccountChannelTotal{Provider: 1, Account: 101, Channel: 7, LiveSeconds: 45, DVRSeconds: 3600}),
			wantAccounts(stats.Range{From: d3, To: d3, Provider: 2},
				stats.AccountChannelTotal{Provider: 2, Account: 200, Channel: 9, LiveSeconds: 60}),
			wantAccounts(stats.Range{From: d4, To: d4}),
		},
	},
	{
		name:   "ActiveAccounts",
		writes: []write{viewing(v1, v2, v3, v4, v5, v6, v7, v8)},
		checks: []check{
			wantActive(1, d1, 100),
			wantActive(1, d2, 100, 101),
			wantActive(1, d3, 101),
			wantActive(2, d3, 200),
			wantActive(2, d2),
			wantActive(1, d4),
			wantActive(3, d1),
		},
	},
	{
		name: "ViewingRewrittenCountsOnce",
		writes: []write{
			viewing(v1, v2, v5),
			viewing(v1, v2, v5),     // a redelivered batch
			viewing(v5, v5, v1, v2), // repeated within one call
		},
		checks: []check{
			wantClasses(stats.Range{From: d1, To: d2}),
			wantAccounts(stats.Range{From: d1, To: d2},
				stats.AccountChannelTotal{Provider: 1, Account: 100, Channel: 7, LiveSeconds: 600},
				stats.AccountChannelTotal{Provider: 1, Account: 100, Channel: 8, DVRSeconds: 120},
				stats.AccountChannelTotal{Provider: 1, Account: 101, Channel: 7, DVRSeconds: 3600}),
			wantActive(1, d2, 101),
		},
	},
	{
		name: "ClassSeenKeepsEarliestDay",
		writes: []write{
			seen(stats.DeviceClassSeen{Provider: 1, Class: "tablet", Day: d3}),
			seen(stats.DeviceClassSeen{Provider: 1, Class: "tablet", Day: d2}),
			seen(stats.DeviceClassSeen{Provider: 1, Class: "tablet", Day: d4}, stats.DeviceClassSeen{Provider: 1, Class: "tablet", Day: d3}),
			viewing(fact(d3, 1, 100, 1003, "tablet", 7, true, 10, 20, 0)),
		},
		checks: []check{
			wantClasses(stats.Range{From: d1, To: d1}),
			wantClasses(stats.Range{From: d1, To: d2}, stats.DeviceClassTotal{Provider: 1, Class: "tablet"}),
			wantClasses(stats.Range{From: d1, To: d4}, stats.DeviceClassTotal{Provider: 1, Class: "tablet", LiveSeconds: 10, UniqueDevices: 1}),
		},
	},
}
