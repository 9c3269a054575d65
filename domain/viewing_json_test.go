package domain_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/domain/domaintest"
)

func randomViewing(rng *rand.Rand) domain.ViewingReported {
	ints := []int64{0, 1, -1, 7, 1234567, math.MaxInt64, math.MinInt64}
	pick := func() int64 {
		if rng.IntN(2) == 0 {
			return ints[rng.IntN(len(ints))]
		}
		return rng.Int64()
	}
	zones := []*time.Location{time.UTC, time.FixedZone("", 3*3600), time.FixedZone("", -90*60)}
	e := domain.ViewingReported{DeviceID: pick(), Account: pick(), Provider: pick(),
		Class: []domain.DeviceClass{"stb", "tv", "", "x y", "стб<&>"}[rng.IntN(5)], Sessions: []domain.ViewingSession{}}
	for range rng.IntN(5) {
		start := time.Unix(rng.Int64N(4e9), rng.Int64N(2)*rng.Int64N(1e9)).In(zones[rng.IntN(len(zones))])
		e.Sessions = append(e.Sessions, domain.ViewingSession{Channel: pick(), Mode: []domain.ViewingMode{"live", "dvr"}[rng.IntN(2)],
			Start: start, Seconds: pick()})
	}
	if rng.IntN(10) == 0 {
		e.Sessions = nil
	}
	return e
}

func TestViewingReportedJSONIsEncodingJSONs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		domaintest.RoundTripsLikeJSON(t, randomViewing(rng))
	}
	// A start json.Marshal cannot write: the codec declines as Marshal fails.
	domaintest.EncodesLikeJSON(t, domain.ViewingReported{Sessions: []domain.ViewingSession{{Start: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}})
}

func TestViewingReportedDecodeLeavesOtherFormsToEncodingJSON(t *testing.T) {
	for _, data := range []string{
		`{"device_id":1, "account":2,"provider":3,"class":"stb","sessions":[]}`,
		`{"account":2,"device_id":1,"provider":3,"class":"stb","sessions":[]}`,
		`{"DEVICE_ID":1,"account":2,"provider":3,"class":"stb","sessions":[]}`,
		`{"device_id":1,"account":2,"provider":3,"class":"stb","sessions":[],"extra":1}`,
		`{"device_id":01,"account":2,"provider":3,"class":"stb","sessions":[]}`,
		`{"device_id":1.0,"account":2,"provider":3,"class":"stb","sessions":[]}`,
		`{"device_id":9223372036854775808,"account":2,"provider":3,"class":"stb","sessions":[]}`,
		`{"device_id":1,"account":2,"provider":3,"class":"stb","sessions":[{"channel":1,"mode":"live","start":"2026-13-01T00:00:00Z","seconds":5}]}`,
		`{"device_id":1,"account":2,"provider":3,"class":"stb","sessions":[{"channel":1,"mode":"live","start":"2026-01-01T00:00:00Z","seconds":5},]}`,
		`{"device_id":1,"account":2,"provider":3,"class":"stb","sessions":[]} `,
		`{"device_id":1,"account":2,"provider":3,"class":"stb","sessions":[`,
		`{"device_id":1,"account":2,"provider":3,"class":"stb","sessions":[{"channel":1,"mode":"live","start":"2026-01-01T00:00:00Z","seconds":5}`,
		``,
	} {
		if domaintest.DecodesLikeJSON[domain.ViewingReported](t, []byte(data)) {
			t.Errorf("DecodeJSON accepted %s", data)
		}
	}
	for _, data := range []string{
		`{"device_id":1,"account":2,"provider":3,"class":"stb","sessions":null}`,
		`{"device_id":1,"account":2,"provider":3,"class":"s\u0074b","sessions":[]}`,
	} {
		if !domaintest.DecodesLikeJSON[domain.ViewingReported](t, []byte(data)) {
			t.Errorf("DecodeJSON declined %s", data)
		}
	}
}

func FuzzViewingReportedJSON(f *testing.F) {
	f.Add(int64(1), int64(2), int64(3), "stb", int64(5), "live", int64(1700000000), int64(500), int64(60), 1)
	f.Add(int64(-1), int64(0), int64(math.MaxInt64), "\xff<\u2028>", int64(0), "", int64(-1), int64(0), int64(-5), 0)
	f.Fuzz(func(t *testing.T, device, account, provider int64, class string, channel int64, mode string, sec, nsec, seconds int64, n int) {
		e := domain.ViewingReported{DeviceID: device, Account: account, Provider: provider, Class: domain.DeviceClass(class)}
		if n >= 0 {
			e.Sessions = []domain.ViewingSession{}
		}
		for i := range min(n, 4) {
			e.Sessions = append(e.Sessions, domain.ViewingSession{Channel: channel + int64(i), Mode: domain.ViewingMode(mode),
				Start: time.Unix(sec, nsec).In(time.FixedZone("", int(seconds%50000))), Seconds: seconds})
		}
		domaintest.RoundTripsLikeJSON(t, e)
	})
}

// FuzzDecodeViewingReported feeds arbitrary bytes to the codec: whatever it
// accepts must be what encoding/json gives.
func FuzzDecodeViewingReported(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 8 {
		data, _ := json.Marshal(randomViewing(rng))
		f.Add(data)
	}
	f.Add([]byte(`{"device_id":1,"account":2,"provider":3,"class":"stb","sessions":[{"channel":1,"mode":"live","start":"2026-01-01T00:00:00.5+03:00","seconds":-0}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		domaintest.DecodesLikeJSON[domain.ViewingReported](t, data)
	})
}
