package httpapi

import (
	"encoding/json"
	"strings"
	"testing"

	"tvsm/domain"
	"tvsm/httpapi/wire"
	"tvsm/internal/app/command"
)

// FuzzAdminDecode feeds arbitrary bodies to the Admin API's decoders. They
// must never panic; a body they accept must give fields in the states the
// service expects (null only on nullable fields, integers in range), and a
// body they refuse must name each bad field.
func FuzzAdminDecode(f *testing.F) {
	for _, seed := range []string{
		`{"name":"Acme","enabled":1,"devices_per_account_limit":"3","free_tariff":null,"billing":{"resolve":true,"url":"https://b","token":"t"}}`,
		`{"id":5,"name":null,"billing":null,"devices_per_account_limit":99999999999}`,
		`{"billing":{"url":null,"token":""},"enabled":"false"}`,
		`{"provider":"7","name":"T","channels":[1,"2",3.0],"description":null}`,
		`{"name":"C","number":1e3,"logo_url":"","categories":[],"description":"d"}`,
		`{"number":-1,"categories":[null]}`,
		`{"login":"ops","password":12345678,"provider":null}`,
		`{"login":["x"],"password":{},"provider":"x"}`,
		`{"id":"x","billing":[1]}`,
		`{"name":"Acme","region_tag":2,"comment":"c\nd","logo_url":null}`,
		`{"region_tag":"x","comment":5,"logo_url":""}`,
		`{"provider":1,"name":"T","tarif_tag":null}`,
		`{"name":"C","text_name":null,"enabled":"0","time_shift_depth":"72"}`,
		`{"time_shift_depth":-1,"text_name":[1],"enabled":null}`,
		`[]`, `null`, ``, `{"a":`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(name string, decode func(o *wire.Object) any) {
			var id wire.Optional[int64]
			v, ok := fuzzDecode(t, name, data, func(o *wire.Object) any {
				id = adminBodyID(o)
				return decode(o)
			})
			if !ok {
				return
			}
			if n, ok := id.Get(); ok && n <= 0 {
				t.Fatalf("%s: accepted id %d", name, n)
			}
			if id.IsNull() {
				t.Fatalf("%s: null id", name)
			}
			adminCheckDecoded(t, name, v)
		}
		check("provider", func(o *wire.Object) any { return decodeAdminProvider(o) })
		check("tariff", func(o *wire.Object) any { return decodeAdminTariff(o) })
		check("channel", func(o *wire.Object) any { return decodeAdminChannel(o) })
		check("category", func(o *wire.Object) any { return decodeAdminCategory(o) })
		check("admin", func(o *wire.Object) any { return decodeAdminAdmin(o) })
	})
}

// fuzzDecode decodes data as a request body with decode. ok is false when
// data is not a JSON object or decode refused some fields; then every
// refused field must be named.
func fuzzDecode(t *testing.T, name string, data []byte, decode func(o *wire.Object) any) (v any, ok bool) {
	t.Helper()
	o, err := wire.DecodeObject(data, wire.DecodeOptions{})
	if err != nil {
		return nil, false
	}
	v = decode(o)
	if err := o.Err(); err != nil {
		fe, ok := err.(wire.FieldErrors)
		if !ok || len(fe) == 0 {
			t.Fatalf("%s: error %T %v is not a list of field errors", name, err, err)
		}
		for field := range fe {
			if field == "" || strings.HasPrefix(field, ".") {
				t.Fatalf("%s: unnamed field in %v", name, fe)
			}
		}
		return nil, false
	}
	return v, true
}

// adminCheckDecoded checks the invariants of decoded fields.
func adminCheckDecoded(t *testing.T, name string, v any) {
	t.Helper()
	notNull := func(field string, null bool) {
		if null {
			t.Fatalf("%s: %s decoded as null; it is not nullable", name, field)
		}
	}
	switch f := v.(type) {
	case command.ProviderFields:
		notNull("name", f.Name.IsNull())
		notNull("enabled", f.Enabled.IsNull())
		notNull("billing.resolve", f.Billing.Resolve.IsNull())
		if n, ok := f.DevicesPerAccountLimit.Get(); ok && (n < 0 || n > domain.MaxDeviceLimit) {
			t.Fatalf("%s: limit %d accepted", name, n)
		}
	case command.TariffFields:
		notNull("name", f.Name.IsNull())
		notNull("provider", f.Provider.IsNull())
		notNull("channels", f.Channels.IsNull())
		if v, ok := f.Channels.Get(); f.Channels.Present && ok && v == nil {
			t.Fatalf("%s: channels present as a nil list", name)
		}
	case command.ChannelFields:
		notNull("name", f.Name.IsNull())
		notNull("number", f.Number.IsNull())
		notNull("enabled", f.Enabled.IsNull())
		if n, ok := f.Number.Get(); ok && (n < 0 || n > domain.MaxChannelNumber) {
			t.Fatalf("%s: number %d accepted", name, n)
		}
		if n, ok := f.TimeShiftDepth.Get(); ok && (n < 0 || n > domain.MaxTimeShiftDepth) {
			t.Fatalf("%s: time_shift_depth %d accepted", name, n)
		}
	case command.AdminFields:
		notNull("login", f.Login.IsNull())
		notNull("password", f.Password.IsNull())
	}
	if _, err := json.Marshal(v); err != nil {
		t.Fatalf("%s: decoded fields do not encode: %v", name, err)
	}
}
