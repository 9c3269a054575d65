package httpapi

import (
	"encoding/json"
	"testing"

	"tvsm/domain"
	"tvsm/httpapi/wire"
	"tvsm/internal/app/command"
)

// FuzzProviderCatalogDecode feeds arbitrary bodies to the decoders of the
// Provider API's catalog writes (tarifs, tarif_tags, device_types), as
// TVIP's SDK and hand-written clients send them. They must never panic; a
// body they accept gives fields in the states the commands expect (null
// only where it clears: a tariff's tarif_tag and description), and a body
// they refuse names each bad field.
func FuzzProviderCatalogDecode(f *testing.F) {
	for _, seed := range []string{
		`{"id":null,"tarif_name":"Basic","provider":1,"tarif_tag":3,"enabled":true}`,
		`{"id":7,"tarif_name":"Basic","provider":null,"tarif_tag":null,"enabled":"True"}`,
		`{"name":"Basic","channels":[1,"2",3.0],"description":null,"tarif_tag":""}`,
		`{"tarif_name":5,"tarif_tag":"x","enabled":"maybe","channels":[null]}`,
		`{"enabled":false,"name":"Kids","provider":1,"id":null,"position":null}`,
		`{"enabled":1,"name":"Kids","provider":"1","position":"3"}`,
		`{"position":-1,"provider":1.5}`,
		`{"position":1e300}`,
		`{"device_type":"tvip_s605","id":null}`,
		`{"device_type":605,"id":"9"}`,
		`{"device_type":["x"],"id":-3}`,
		`[]`, `null`, ``, `{"a":`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(name string, decode func(o *wire.Object) any) {
			var id int64
			var update bool
			v, ok := fuzzDecode(t, name, data, func(o *wire.Object) any {
				id, update = providerBodyID(o, 0)
				return decode(o)
			})
			if !ok {
				return
			}
			if update && id <= 0 {
				t.Fatalf("%s: update of id %d", name, id)
			}
			providerCheckCatalog(t, name, v)
		}
		check("tarif", func(o *wire.Object) any { return readProviderTarif(o) })
		check("tarif_tag", func(o *wire.Object) any { return readProviderTarifTag(o) })
		check("device_type", func(o *wire.Object) any { return readProviderDeviceType(o) })
	})
}

// providerCheckCatalog checks the invariants of decoded catalog fields.
func providerCheckCatalog(t *testing.T, name string, v any) {
	t.Helper()
	notNull := func(field string, null bool) {
		if null {
			t.Fatalf("%s: %s decoded as null; it is not nullable", name, field)
		}
	}
	switch f := v.(type) {
	case command.TariffFields:
		notNull("tarif_name", f.Name.IsNull())
		notNull("provider", f.Provider.IsNull())
		notNull("enabled", f.Enabled.IsNull())
		notNull("channels", f.Channels.IsNull())
	case command.TariffTagFields:
		notNull("name", f.Name.IsNull())
		notNull("provider", f.Provider.IsNull())
		notNull("enabled", f.Enabled.IsNull())
		notNull("position", f.Position.IsNull())
		if n, ok := f.Position.Get(); ok && (n < 0 || n > domain.MaxTariffTagPosition) {
			t.Fatalf("%s: position %d accepted", name, n)
		}
	case command.NameFields:
		notNull("device_type", f.Name.IsNull())
	default:
		t.Fatalf("%s: decoded %T", name, v)
	}
	if _, err := json.Marshal(v); err != nil {
		t.Fatalf("%s: decoded fields do not encode: %v", name, err)
	}
}
