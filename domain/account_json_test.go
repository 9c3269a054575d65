package domain_test

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"tvsm/domain"
	"tvsm/domain/domaintest"
)

func accountCreatedSamples() []domain.AccountCreated {
	return []domain.AccountCreated{
		{AccountID: 1, Provider: 2, Login: "alice", PinMD5: "81dc9bdb52d04dc20036dbd8313ed055"},
		{AccountID: math.MaxInt64, Provider: math.MinInt64, Login: "Алиса", PinMD5: "", Fullname: jsonStringsJoined, Enabled: true,
			RemoteCustomField: ptr(""), ContractInfo: ptr("c <1> & \"2\""), MainAddress: ptr("ул. Ленина, 1\n"),
			AccountDesc: ptr("\u2028\xff"), RegionTag: ptr[int64](math.MaxInt64), DevicesPerAccountLimit: ptr(0)},
		{AccountID: -1, Login: "x", Fullname: "😀", RegionTag: ptr[int64](-7), DevicesPerAccountLimit: ptr(math.MinInt)},
		{AccountID: 7, Login: "y", AccountDesc: ptr("only desc"), DevicesPerAccountLimit: ptr(math.MaxInt)},
	}
}

func accountUpdatedSamples() []domain.AccountUpdated {
	return []domain.AccountUpdated{
		{AccountID: 1},
		{AccountID: 2, Enabled: domain.Some(false), Login: domain.Some("bob"), PinMD5: domain.Some("e10adc3949ba59abbe56e057f20f883e"),
			Fullname: domain.Some(jsonStringsJoined), RemoteCustomField: domain.Some(""), ContractInfo: domain.Some("<c>"),
			MainAddress: domain.Some("Невский"), AccountDesc: domain.Some("d"), RegionTag: domain.Some[int64](12), DevicesPerAccountLimit: domain.Some(-3)},
		{AccountID: 3, Enabled: domain.Some(true), RemoteCustomField: domain.Null[string](), ContractInfo: domain.Null[string](),
			MainAddress: domain.Null[string](), AccountDesc: domain.Null[string](), RegionTag: domain.Null[int64](),
			DevicesPerAccountLimit: domain.Null[int]()},
		{AccountID: 4, RegionTag: domain.Optional[int64]{Present: true, Null: true, Value: 99},
			DevicesPerAccountLimit: domain.Optional[int]{Null: true, Value: 9}},
	}
}

// encodesAsBefore checks e's JSONCodec against encoding/json and the
// registry's Encode against json.Marshal.
func encodesAsBefore[T domain.JSONCodec](t *testing.T, reg *domain.Registry, e T) {
	t.Helper()
	domaintest.RoundTripsLikeJSON(t, e)
	want, _ := json.Marshal(e)
	if _, got, err := reg.Encode(e); err != nil || string(got) != string(want) {
		t.Fatalf("Registry.Encode(%#v) = %s, %v; want %s", e, got, err, want)
	}
}

func TestAccountEventsJSON(t *testing.T) {
	reg := eventRegistry()
	for _, e := range accountCreatedSamples() {
		encodesAsBefore(t, reg, e)
	}
	for _, e := range accountUpdatedSamples() {
		encodesAsBefore(t, reg, e)
	}
}

func TestAccountEventsRegistryRoundTrip(t *testing.T) {
	reg := eventRegistry()
	for _, e := range []domain.Event{accountCreatedSamples()[0], accountCreatedSamples()[3], accountUpdatedSamples()[2]} {
		name, data, err := reg.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := reg.Decode(name, data); err != nil || !reflect.DeepEqual(got, e) {
			t.Errorf("Decode(%s) = %#v, %v; want %#v", data, got, err, e)
		}
	}
}

// decodesAsBefore fails unless the registry decodes data as json.Unmarshal
// into the zero T (the registry before JSONCodec did) does, error or not.
func decodesAsBefore[T domain.Event](t *testing.T, reg *domain.Registry, data []byte) {
	t.Helper()
	var zero T
	got, err := reg.Decode(zero.EventType(), data)
	var want T
	werr := json.Unmarshal(data, &want)
	if (err != nil) != (werr != nil) || (err == nil && !reflect.DeepEqual(got, want)) {
		t.Fatalf("Decode(%s) = %#v, %v; encoding/json gives %#v, %v", data, got, err, want, werr)
	}
}

// acceptsAsWanted fails unless T's DecodeJSON accepts data as wanted, and
// then as encoding/json reads it.
func acceptsAsWanted[T domain.JSONCodec](t *testing.T, data string, want bool) {
	t.Helper()
	if got := domaintest.DecodesLikeJSON[T](t, []byte(data)); got != want {
		t.Fatalf("DecodeJSON(%s) accepted %v, want %v", data, got, want)
	}
}

func TestAccountEventsOtherFormsGoToEncodingJSON(t *testing.T) {
	reg := eventRegistry()
	const head = `{"account_id":1,"provider":2,"login":"a","pin_md5":"p","fullname":"f","enabled":true`
	for data, want := range map[string]bool{
		head + `}`: true, head + `,"region_tag":12}`: true, head + `,"region_tag":"12"}`: false,
		head + ` }`: false, head + `}x`: false, head + `,"extra":1}`: false, head + `,"region_tag":null}`: false,
		head + `,"devices_per_account_limit":1.0}`: false, head + `,"devices_per_account_limit":9223372036854775808}`: false,
		head + `,"main_address":"\ud83d\ude00"}`: false, head + `,"main_address":"\'"}`: false, head + `,"main_address":"a","contract_info":"b"}`: false,
		head + `,"main_address":"\u00e9\/"}`: true,
		`{"account_id":1, "provider":2}`:     false, `{"Account_ID":1}`: false, `{}`: false, `{"account_id":01}`: false, head: false,
	} {
		acceptsAsWanted[domain.AccountCreated](t, data, want)
		decodesAsBefore[domain.AccountCreated](t, reg, []byte(data))
	}
	for data, want := range map[string]bool{
		`{"account_id":1}`: true, `{"account_id":1,"enabled":null,"region_tag":null}`: true,
		`{"account_id":1,"enabled":"yes"}`: false, `{"account_id":1,"login":"a","enabled":true}`: false,
		`{"account_id":1,"login":null }`: false, `{"account_id":1,"login":"a","login":"b"}`: false, `{"account_id":1}` + "\n": false,
	} {
		acceptsAsWanted[domain.AccountUpdated](t, data, want)
		decodesAsBefore[domain.AccountUpdated](t, reg, []byte(data))
	}
}

// fuzzStrings derives distinct strings from one fuzz input, so that a
// single argument exercises every string field.
func fuzzStrings(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s[min(i, len(s)):]
	}
	return out
}

func FuzzAccountCreatedJSON(f *testing.F) {
	for _, e := range accountCreatedSamples() {
		f.Add(e.AccountID, e.Provider, e.Login, e.Fullname, e.Enabled, uint8(0xff), 3)
	}
	f.Add(int64(0), int64(-5), "", "\xff<\u2028>", false, uint8(0x15), -1)
	f.Fuzz(func(t *testing.T, id, provider int64, login, text string, enabled bool, set uint8, limit int) {
		s := fuzzStrings(text, 6)
		e := domain.AccountCreated{AccountID: id, Provider: provider, Login: login, PinMD5: s[0], Fullname: text, Enabled: enabled}
		for i, field := range []**string{&e.RemoteCustomField, &e.ContractInfo, &e.MainAddress, &e.AccountDesc} {
			if set&(1<<i) != 0 {
				*field = &s[i+1]
			}
		}
		if set&(1<<4) != 0 {
			region := provider ^ int64(limit)
			e.RegionTag = &region
		}
		if set&(1<<5) != 0 {
			e.DevicesPerAccountLimit = &limit
		}
		domaintest.RoundTripsLikeJSON(t, e)
	})
}

func FuzzAccountUpdatedJSON(f *testing.F) {
	f.Add(int64(1), true, "bob", jsonStringsJoined, 3, uint16(0xffff), uint16(0))
	f.Add(int64(-1), false, "", "", 0, uint16(0x3ff), uint16(0x3f0))
	f.Fuzz(func(t *testing.T, id int64, enabled bool, login, text string, limit int, present, null uint16) {
		s := fuzzStrings(text, 7)
		e := domain.AccountUpdated{AccountID: id, Enabled: domain.Some(enabled), Login: domain.Some(login),
			DevicesPerAccountLimit: domain.Some(limit)}
		strs := []*domain.Optional[string]{&e.PinMD5, &e.Fullname, &e.RemoteCustomField, &e.ContractInfo, &e.MainAddress, &e.AccountDesc}
		for i, o := range strs {
			*o = domain.Some(s[i])
		}
		e.Enabled.Present, e.Enabled.Null = present&1 != 0, null&1 != 0
		e.Login.Present, e.Login.Null = present&2 != 0, null&2 != 0
		e.DevicesPerAccountLimit.Present, e.DevicesPerAccountLimit.Null = present&4 != 0, null&4 != 0
		for i, o := range strs {
			o.Present, o.Null = present&(8<<i) != 0, null&(8<<i) != 0
		}
		e.RegionTag = domain.Some(id * int64(limit))
		e.RegionTag.Present, e.RegionTag.Null = present&(8<<len(strs)) != 0, null&(8<<len(strs)) != 0
		domaintest.RoundTripsLikeJSON(t, e)
	})
}

// FuzzDecodeAccountEvents feeds arbitrary bytes to the account codecs:
// whatever they accept must be what encoding/json gives.
func FuzzDecodeAccountEvents(f *testing.F) {
	for _, e := range accountCreatedSamples() {
		data, _ := json.Marshal(e)
		f.Add(data)
	}
	for _, e := range accountUpdatedSamples() {
		data, _ := json.Marshal(e)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		domaintest.DecodesLikeJSON[domain.AccountCreated](t, data)
		domaintest.DecodesLikeJSON[domain.AccountUpdated](t, data)
	})
}
