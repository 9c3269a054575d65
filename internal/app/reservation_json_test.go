package app

import (
	"testing"
	"time"

	"tvsm/domain/domaintest"
)

// ReservationTaken's JSONCodec must write what json.Marshal writes and
// read what json.Unmarshal reads (or leave the data to it).

func TestReservationTakenJSON(t *testing.T) {
	at := time.Date(2026, 11, 22, 17, 59, 41, 123456789, time.UTC)
	for _, e := range []ReservationTaken{
		{Owner: "account-1", At: at},
		{Owner: "account-2", Evicted: "account-1", At: at.In(time.FixedZone("", 3*3600))},
		{Owner: `<&>"\` + "\u2028\xff", Evicted: "Зоя", At: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		{At: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, // json.Marshal fails, AppendJSON declines
	} {
		domaintest.RoundTripsLikeJSON(t, e)
	}
	for data, want := range map[string]bool{
		`{"owner":"a","evicted":"","at":"2026-01-01T00:00:00Z"}`:  true,
		`{"owner":"a","at":"2026-01-01T00:00:00Z","evicted":"b"}`: false,
		`{"owner":"a","at":"2026-01-01T00:00:00Z"} `:              false,
		`{"owner":"a","at":null}`:                                 false,
	} {
		if got := domaintest.DecodesLikeJSON[ReservationTaken](t, []byte(data)); got != want {
			t.Errorf("DecodeJSON(%s) accepted %v, want %v", data, got, want)
		}
	}
}

func TestReservationTakenRegistryRoundTrip(t *testing.T) {
	reg := newRegistry()
	e := ReservationTaken{Owner: "account-1", Evicted: "account-0", At: time.Date(2026, 11, 22, 17, 59, 41, 0, time.UTC)}
	name, data, err := reg.Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := reg.Decode(name, data); err != nil || got != e {
		t.Errorf("Decode(%s) = %#v, %v; want %#v", data, got, err, e)
	}
}

func FuzzReservationTakenJSON(f *testing.F) {
	f.Add("account-1", "", int64(1795370381), int64(5), []byte(`{"owner":"a","evicted":"b","at":"2026-01-01T00:00:00.5+03:00"}`))
	f.Add("<&>", "\xff", int64(-62167219200), int64(0), []byte(`{"owner":"\u00e9","at":"0000-01-01T00:00:00Z"}`))
	f.Fuzz(func(t *testing.T, owner, evicted string, sec, nsec int64, data []byte) {
		domaintest.RoundTripsLikeJSON(t, ReservationTaken{Owner: owner, Evicted: evicted, At: time.Unix(sec, nsec).UTC()})
		domaintest.DecodesLikeJSON[ReservationTaken](t, data)
	})
}
