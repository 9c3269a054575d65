package wire

import (
	"testing"
)

// accountJSON is an account as a provider's resync job sends it: the whole
// record read back from the API, with read-only fields and loose types.
var accountJSON = []byte(`{"id":null,"enabled":1,"login":"subscriber-000123","pin_md5":"0cc175b9c0f1b6a831c399e269772661",
"fullname":"Anna Example","provider":"7","remote_custom_field":"crm-88123","contract_info":null,"main_address":"Main st. 1",
"account_desc":null,"provider_dto":null,"region_tag":"north","region_dto":null,"devices_per_account_limit":"3",
"created":"2026-01-01T00:00:00+0000","last_online":"2026-11-22T17:59:41+0000"}`)

// BenchmarkDecodeAccount decodes a typical account and reads every field
// with the getters, as the create/update handler does.
func BenchmarkDecodeAccount(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(accountJSON)))
	for b.Loop() {
		o, err := DecodeObject(accountJSON, DecodeOptions{})
		if err != nil {
			b.Fatal(err)
		}
		o.Int64("id")
		o.Bool("enabled")
		o.String("login")
		o.String("pin_md5")
		o.String("fullname")
		o.Int64("provider")
		o.NullableString("remote_custom_field")
		o.NullableString("contract_info")
		o.NullableString("main_address")
		o.NullableString("account_desc")
		o.NullableString("region_tag")
		o.NullableInt64("devices_per_account_limit")
		o.Require("login", "pin_md5", "fullname", "provider")
		if err := o.Err(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseDateTime(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseDateTime("2026-11-22T20:59:41+03:00"); err != nil {
			b.Fatal(err)
		}
	}
}
