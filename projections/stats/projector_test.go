package stats_test

import (
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/projections/stats"
)

// The end-of-day cases: each feeds events stamped at given times and checks
// every subscription row of the closed days.

func TestDaysCloseWhenEventsPassMidnight(t *testing.T) {
	e := newEnv(t, stats.ProjectorOptions{})
	e.at("2026-03-01 09:00:00", tariffCreated(10, 1), tariffCreated(11, 1), tariffCreated(20, 2))
	e.at("2026-03-01 10:00:00", accountCreated(100, 1, true), subscribed(100, 1, 10, "2026-03-01 00:00:00"), bound(100, 500, domain.DeviceSTB))
	e.at("2026-03-01 12:00:00", accountCreated(101, 1, false), subscribed(101, 2, 10, "2026-02-01 00:00:00"), subscribed(101, 3, 11, "2026-03-01 00:00:00"))
	if _, ok := e.p.ClosedThrough(); ok {
		t.Fatal("a day is closed before any event passed midnight")
	}
	// The next event, two days later, closes 1 March and the quiet 2 March.
	e.at("2026-03-03 08:00:00", accountCreated(102, 1, true))
	checkText(t, "rows", e.subRows("2026-02-28", "2026-03-03"), `
2026-03-01 p1 t10 enabled=1 devices=1 active=0 disabled=1 with_devices=1
2026-03-01 p1 t11 enabled=0 devices=0 active=0 disabled=1 with_devices=0
2026-03-02 p1 t10 enabled=1 devices=1 active=0 disabled=1 with_devices=1
2026-03-02 p1 t11 enabled=0 devices=0 active=0 disabled=1 with_devices=0
2026-03-01 p2 t20 enabled=0 devices=0 active=0 disabled=0 with_devices=0
2026-03-02 p2 t20 enabled=0 devices=0 active=0 disabled=0 with_devices=0`)
	if d, ok := e.p.ClosedThrough(); !ok || d != day("2026-03-02") {
		t.Errorf("ClosedThrough = %v, %v; want 2026-03-02", d, ok)
	}
}

func TestLateSubscriptionDoesNotChangeClosedDays(t *testing.T) {
	e := newEnv(t, stats.ProjectorOptions{})
	e.at("2026-03-01 10:00:00", tariffCreated(10, 1), accountCreated(100, 1, true))
	// Recorded on 3 March with a start a week before: 1 and 2 March hold
	// what was known at their midnight.
	e.at("2026-03-03 10:00:00", subscribed(100, 1, 10, "2026-02-24 00:00:00"))
	e.at("2026-03-04 10:00:00", enabled(100, true)) // closes 3 March
	checkText(t, "rows", e.subRows("2026-03-01", "2026-03-04"), `
2026-03-01 p1 t10 enabled=0 devices=0 active=0 disabled=0 with_devices=0
2026-03-02 p1 t10 enabled=0 devices=0 active=0 disabled=0 with_devices=0
2026-03-03 p1 t10 enabled=1 devices=0 active=0 disabled=0 with_devices=0`)
}

func TestSubscriptionWindowsAtTheEndOfTheDay(t *testing.T) {
	e := newEnv(t, stats.ProjectorOptions{})
	e.at("2026-03-01 10:00:00", tariffCreated(10, 1),
		accountCreated(100, 1, true), subscribed(100, 1, 10, "2026-02-01 00:00:00"),
		accountCreated(101, 1, true), subscribed(101, 2, 10, "2026-02-01 00:00:00"),
		accountCreated(102, 1, true), subscribed(102, 3, 10, "2026-03-03 00:00:00"),
		accountCreated(103, 1, true), subscribed(103, 4, 10, "2026-03-02 23:59:59", "2026-03-03 00:00:01"))
	e.at("2026-03-01 11:00:00",
		stopped(100, 1, "2026-03-02 23:59:00"), // ends before the end of 2 March
		stopped(101, 2, "2026-03-03 00:00:00")) // covers 2 March to its end
	e.at("2026-03-05 10:00:00", enabled(100, true))
	checkText(t, "rows", e.subRows("2026-03-01", "2026-03-05"), `
2026-03-01 p1 t10 enabled=2 devices=0 active=0 disabled=0 with_devices=0
2026-03-02 p1 t10 enabled=2 devices=0 active=0 disabled=0 with_devices=0
2026-03-03 p1 t10 enabled=1 devices=0 active=0 disabled=0 with_devices=0
2026-03-04 p1 t10 enabled=1 devices=0 active=0 disabled=0 with_devices=0`)
	// 2 March: 101 (stop at the next midnight) and 103 (one second before
	// midnight to one second after). 3 March on: 102, which starts at
	// midnight.
}

func TestEnabledAndDevicesAsAtMidnight(t *testing.T) {
	e := newEnv(t, stats.ProjectorOptions{})
	e.at("2026-03-01 10:00:00", tariffCreated(10, 1),
		accountCreated(100, 1, true), subscribed(100, 1, 10, "2026-02-01 00:00:00"),
		accountCreated(101, 1, true), subscribed(101, 2, 10, "2026-02-01 00:00:00"),
		bound(100, 500, domain.DeviceSTB))
	e.at("2026-03-01 12:00:00", unbound(100, 500)) // bound and unbound the same day
	e.at("2026-03-02 10:00:00", enabled(100, false), bound(101, 501, domain.DeviceTV), bound(101, 502, domain.DevicePhone))
	e.at("2026-03-02 11:00:00", enabled(100, true), enabled(101, false)) // disabled, enabled again
	e.at("2026-03-03 00:00:00", enabled(101, true), unbound(101, 502))   // at midnight: counts for 3 March
	e.at("2026-03-04 10:00:00", enabled(100, true))
	checkText(t, "rows", e.subRows("2026-03-01", "2026-03-04"), `
2026-03-01 p1 t10 enabled=2 devices=0 active=0 disabled=0 with_devices=0
2026-03-02 p1 t10 enabled=1 devices=0 active=0 disabled=1 with_devices=0
2026-03-03 p1 t10 enabled=2 devices=1 active=0 disabled=0 with_devices=1`)
}

func TestAccountsAndTariffsComingAndGoing(t *testing.T) {
	e := newEnv(t, stats.ProjectorOptions{})
	e.at("2026-03-01 10:00:00", tariffCreated(10, 1), tariffCreated(11, 1),
		accountCreated(100, 1, true), subscribed(100, 1, 10, "2026-02-01 00:00:00"), subscribed(100, 2, 11, "2026-02-01 00:00:00"),
		subscribed(100, 3, 10, "2026-02-15 00:00:00"), // a second subscription to the same tariff counts once
		accountCreated(101, 1, true), subscribed(101, 4, 11, "2026-02-01 00:00:00"))
	e.at("2026-03-02 10:00:00", domain.TariffDeleted{TariffID: 10}, domain.SubscriptionRemoved{AccountID: 101, SubscriptionID: 4})
	e.at("2026-03-03 10:00:00", domain.AccountDeleted{AccountID: 100})
	e.at("2026-03-04 10:00:00", enabled(101, false))
	checkText(t, "rows", e.subRows("2026-03-01", "2026-03-04"), `
2026-03-01 p1 t10 enabled=1 devices=0 active=0 disabled=0 with_devices=0
2026-03-01 p1 t11 enabled=2 devices=0 active=0 disabled=0 with_devices=0
2026-03-02 p1 t10 enabled=1 devices=0 active=0 disabled=0 with_devices=0
2026-03-02 p1 t11 enabled=1 devices=0 active=0 disabled=0 with_devices=0
2026-03-03 p1 t11 enabled=0 devices=0 active=0 disabled=0 with_devices=0`)
	// 2 March: tariff 10 is deleted but still has a subscriber, so it keeps
	// a row; 3 March: neither.
}

func TestActiveCountsLateViewingWithinTheWindow(t *testing.T) {
	e := newEnv(t, stats.ProjectorOptions{Window: 3})
	e.at("2026-03-01 10:00:00", tariffCreated(10, 1),
		accountCreated(100, 1, true), subscribed(100, 1, 10, "2026-02-01 00:00:00"),
		accountCreated(101, 1, false), subscribed(101, 2, 10, "2026-02-01 00:00:00"),
		accountCreated(102, 1, true))
	e.at("2026-03-01 20:00:00", watched(100, 500, 600, "2026-03-01 19:00:00"))
	e.at("2026-03-01 21:00:00", watched(102, 502, 600, "2026-03-01 20:00:00")) // not subscribed: active nowhere
	// Reported after midnight for a session before it: 1 March is closed
	// by the report itself, then counted again.
	e.at("2026-03-02 00:30:00", watched(101, 501, 300, "2026-03-01 23:50:00"))
	e.at("2026-03-02 01:00:00", watched(101, 501, 300, "2026-03-01 23:55:00")) // the same account again
	e.at("2026-03-07 10:00:00",
		watched(100, 500, 60, "2026-03-03 10:00:00"), // four days late: beyond the window
		watched(101, 501, 60, "2026-03-05 10:00:00", "2026-03-07 09:00:00"))
	e.at("2026-03-08 10:00:00", enabled(100, true))
	checkText(t, "rows", e.subRows("2026-03-01", "2026-03-08"), `
2026-03-01 p1 t10 enabled=1 devices=0 active=2 disabled=1 with_devices=0
2026-03-02 p1 t10 enabled=1 devices=0 active=0 disabled=1 with_devices=0
2026-03-03 p1 t10 enabled=1 devices=0 active=0 disabled=1 with_devices=0
2026-03-04 p1 t10 enabled=1 devices=0 active=0 disabled=1 with_devices=0
2026-03-05 p1 t10 enabled=1 devices=0 active=1 disabled=1 with_devices=0
2026-03-06 p1 t10 enabled=1 devices=0 active=0 disabled=1 with_devices=0
2026-03-07 p1 t10 enabled=1 devices=0 active=1 disabled=1 with_devices=0`)
	// The viewing itself always counts, however late.
	checkText(t, "account totals", accountTotals(t, e.facts, "2026-03-01", "2026-03-08"), `
{Provider:1 Account:100 Channel:7 LiveSeconds:660 DVRSeconds:0}
{Provider:1 Account:101 Channel:7 LiveSeconds:720 DVRSeconds:0}
{Provider:1 Account:102 Channel:7 LiveSeconds:600 DVRSeconds:0}`)
}

func TestViewingFactsAndDeviceClasses(t *testing.T) {
	e := newEnv(t, stats.ProjectorOptions{})
	e.at("2026-03-01 10:00:00", accountCreated(100, 1, true), bound(100, 500, domain.DeviceSTB))
	e.at("2026-03-02 10:00:00", bound(100, 501, domain.DevicePhone))
	e.at("2026-03-03 10:00:00", domain.ViewingReported{DeviceID: 501, Account: 100, Provider: 1, Class: domain.DevicePhone,
		Sessions: []domain.ViewingSession{
			{Channel: 7, Mode: domain.ViewingLive, Start: ts("2026-03-03 08:00:00"), Seconds: 1800},
			{Channel: 8, Mode: domain.ViewingDVR, Start: ts("2026-03-03 09:00:00"), Seconds: 600},
			{Channel: 8, Mode: domain.ViewingDVR, Start: ts("2026-03-03 09:30:00"), Seconds: 0},   // nothing watched
			{Channel: 9, Mode: domain.ViewingLive, Start: ts("2026-03-09 09:00:00"), Seconds: 60}, // clock ahead: the report's day
		}})
	e.at("2026-03-04 10:00:00", domain.DeviceConnected{DeviceID: 500, Account: 100, Provider: 1})
	r := func(from, to string) stats.Range { return stats.Range{From: day(from), To: day(to), Provider: 1} }
	checkClasses(t, e.facts, r("2026-03-01", "2026-03-01"), "[{Provider:1 Class:stb LiveSeconds:0 DVRSeconds:0 UniqueDevices:0}]")
	checkClasses(t, e.facts, r("2026-03-01", "2026-03-03"),
		"[{Provider:1 Class:phone LiveSeconds:1860 DVRSeconds:600 UniqueDevices:1} {Provider:1 Class:stb LiveSeconds:0 DVRSeconds:0 UniqueDevices:0}]")
	checkText(t, "account totals", accountTotals(t, e.facts, "2026-03-01", "2026-03-31"), `
{Provider:1 Account:100 Channel:7 LiveSeconds:1800 DVRSeconds:0}
{Provider:1 Account:100 Channel:8 LiveSeconds:0 DVRSeconds:600}
{Provider:1 Account:100 Channel:9 LiveSeconds:60 DVRSeconds:0}`)
}

// TestDaysInAConfiguredZone cuts days at midnight in UTC+3: 21:00 UTC.
func TestDaysInAConfiguredZone(t *testing.T) {
	e := newEnv(t, stats.ProjectorOptions{Location: time.FixedZone("UTC+3", 3*3600)})
	e.at("2026-03-01 09:00:00", tariffCreated(10, 1),
		accountCreated(100, 1, true), subscribed(100, 1, 10, "2026-02-01 00:00:00", "2026-03-01 21:00:00"), // to local midnight
		accountCreated(101, 1, true), subscribed(101, 2, 10, "2026-03-01 20:59:00")) // 23:59 local
	e.at("2026-03-01 20:59:59", watched(100, 500, 60, "2026-03-01 20:30:00")) // 23:30 local: 1 March
	e.at("2026-03-01 21:00:00", enabled(101, false))                          // 00:00 local, 2 March: closes 1 March
	e.at("2026-03-02 21:00:00", enabled(101, true))
	checkText(t, "rows", e.subRows("2026-02-28", "2026-03-03"), `
2026-03-01 p1 t10 enabled=2 devices=0 active=1 disabled=0 with_devices=0
2026-03-02 p1 t10 enabled=0 devices=0 active=0 disabled=1 with_devices=0`)
	checkClasses(t, e.facts, stats.Range{From: day("2026-03-01"), To: day("2026-03-01")},
		"[{Provider:1 Class:stb LiveSeconds:60 DVRSeconds:0 UniqueDevices:1}]")
}
