package domain_test

import (
	"reflect"
	"testing"
	"time"

	"tvsm/domain"
)

func TestAccountDiff(t *testing.T) {
	d := domain.AccountDecider()
	withTag := created
	withTag.RegionTag = ptr[int64](3)
	type fc = domain.FieldChange
	tests := []struct {
		name    string
		history []domain.Event
		event   domain.Event
		want    []domain.FieldChange
		summary string
	}{
		{"created", nil, withTag, []fc{
			{Field: "provider", New: int64(7)}, {Field: "login", New: "alice"}, {Field: "pin_md5", Secret: true},
			{Field: "fullname", New: "Alice Smith"}, {Field: "enabled", New: true}, {Field: "region_tag", New: int64(3)},
		}, "account created"},
		{"disabled", []domain.Event{created}, domain.AccountUpdated{AccountID: 42, Enabled: domain.Some(false)},
			[]fc{{Field: "enabled", Old: true, New: false}}, "account disabled"},
		{"enabled", []domain.Event{created, domain.AccountUpdated{AccountID: 42, Enabled: domain.Some(false)}},
			domain.AccountUpdated{AccountID: 42, Enabled: domain.Some(true)},
			[]fc{{Field: "enabled", Old: false, New: true}}, "account enabled"},
		{"updated", []domain.Event{withTag}, domain.AccountUpdated{
			AccountID: 42, Login: domain.Some("bob"), PinMD5: domain.Some(pin), RegionTag: domain.Null[int64](),
			DevicesPerAccountLimit: domain.Some(2),
		}, []fc{
			{Field: "login", Old: "alice", New: "bob"}, {Field: "pin_md5", Secret: true},
			{Field: "region_tag", Old: int64(3)}, {Field: "devices_per_account_limit", New: 2},
		}, "account updated"},
		{"deleted", []domain.Event{created}, domain.AccountDeleted{AccountID: 42}, nil, "account deleted"},
		{"subscription added", []domain.Event{created}, sub2, []fc{
			{Field: "subscriptions[2].tarif", New: int64(6)}, {Field: "subscriptions[2].start", New: day(1, 1)},
			{Field: "subscriptions[2].stop", New: day(2, 1)},
		}, "subscription 2 added"},
		{"subscription ended", []domain.Event{created, sub1},
			domain.SubscriptionChanged{AccountID: 42, SubscriptionID: 1, Stop: domain.Some(day(3, 1))},
			[]fc{{Field: "subscriptions[1].stop", New: day(3, 1)}}, "subscription 1 ended"},
		{"subscription reopened", []domain.Event{created, sub2},
			domain.SubscriptionChanged{AccountID: 42, SubscriptionID: 2, Stop: domain.Null[time.Time]()},
			[]fc{{Field: "subscriptions[2].stop", Old: day(2, 1)}}, "subscription 2 reopened"},
		{"subscription changed", []domain.Event{created, sub1},
			domain.SubscriptionChanged{AccountID: 42, SubscriptionID: 1, Tariff: domain.Some[int64](9)},
			[]fc{{Field: "subscriptions[1].tarif", Old: int64(5), New: int64(9)}}, "subscription 1 changed"},
		{"subscription removed", []domain.Event{created, sub1},
			domain.SubscriptionRemoved{AccountID: 42, SubscriptionID: 1},
			[]fc{{Field: "subscriptions[1].tarif", Old: int64(5)}, {Field: "subscriptions[1].start", Old: day(1, 1)}},
			"subscription 1 removed"},
		{"device bound", []domain.Event{created}, device1, []fc{
			{Field: "devices[1].unique_id", New: "stb-1"}, {Field: "devices[1].class", New: domain.DeviceSTB},
			{Field: "devices[1].model", New: "MAG 524"},
		}, "device 1 bound"},
		{"device unbound", []domain.Event{created, device2},
			domain.DeviceUnbound{AccountID: 42, DeviceID: 2, UniqueID: "phone-2"}, []fc{
				{Field: "devices[2].unique_id", Old: "phone-2"}, {Field: "devices[2].class", Old: domain.DevicePhone},
			}, "device 2 unbound"},
		{"other aggregate", []domain.Event{created}, domain.TariffDeleted{TariffID: 1}, nil, domain.TariffDeletedType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := d.Replay(tt.history...).Diff(tt.event)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Diff =\n%+v\nwant\n%+v", got, tt.want)
			}
			if s := domain.SummarizeAccountEvent(tt.event); s != tt.summary {
				t.Errorf("summary %q, want %q", s, tt.summary)
			}
		})
	}
}
