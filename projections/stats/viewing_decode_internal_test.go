package stats

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"tvsm/domain"
)

func viewingRegistry() *domain.Registry {
	reg := domain.NewRegistry()
	domain.RegisterEvents(reg)
	return reg
}

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
		Class: []domain.DeviceClass{"stb", "tv", "", "x y"}[rng.IntN(4)], Sessions: []domain.ViewingSession{}}
	for range rng.IntN(5) {
		start := time.Unix(rng.Int64N(4e9), rng.Int64N(2)*rng.Int64N(1e9)).In(zones[rng.IntN(len(zones))])
		e.Sessions = append(e.Sessions, domain.ViewingSession{Channel: pick(), Mode: []domain.ViewingMode{"live", "dvr"}[rng.IntN(2)],
			Start: start, Seconds: pick()})
	}
	return e
}

// sameAsRegistry fails unless decodeViewing accepts data exactly when it
// should (want) and then gives what the registry gives.
func sameAsRegistry(t *testing.T, reg *domain.Registry, data []byte, want bool) {
	t.Helper()
	fast, ok := decodeViewing(data)
	if ok != want {
		t.Fatalf("decodeViewing(%s): ok %v, want %v", data, ok, want)
	}
	if !ok {
		return
	}
	slow, err := reg.Decode(domain.ViewingReportedType, data)
	if err != nil {
		t.Fatalf("decodeViewing accepted %s, the registry refuses it: %v", data, err)
	}
	if !reflect.DeepEqual(slow, fast) {
		t.Fatalf("%s:\nregistry %#v\nfast     %#v", data, slow, fast)
	}
}

func TestDecodeViewingReadsWhatEncodingJSONWrites(t *testing.T) {
	reg := viewingRegistry()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		data, err := json.Marshal(randomViewing(rng))
		if err != nil {
			t.Fatal(err)
		}
		sameAsRegistry(t, reg, data, true)
	}
}

func TestDecodeViewingLeavesEverythingElseToTheRegistry(t *testing.T) {
	reg := viewingRegistry()
	for _, data := range []string{
		`{"device_id":1,"account":2,"provider":3,"class":"stb","sessions":null}`,
		`{"device_id":1, "account":2,"provider":3,"class":"stb","sessions":[]}`,
		`{"account":2,"device_id":1,"provider":3,"class":"stb","sessions":[]}`,
		`{"DEVICE_ID":1,"account":2,"provider":3,"class":"stb","sessions":[]}`,
		`{"device_id":1,"account":2,"provider":3,"class":"s\u0074b","sessions":[]}`,
		`{"device_id":1,"account":2,"provider":3,"class":"stb","sessions":[],"extra":1}`,
		`{"device_id":01,"account":2,"provider":3,"class":"stb","sessions":[]}`,
		`{"device_id":1.0,"account":2,"provider":3,"class":"stb","sessions":[]}`,
		`{"device_id":9223372036854775808,"account":2,"provider":3,"class":"stb","sessions":[]}`,
		`{"device_id":1,"account":2,"provider":3,"class":"стб","sessions":[]}`,
		`{"device_id":1,"account":2,"provider":3,"class":"stb","sessions":[{"channel":1,"mode":"live","start":"2026-13-01T00:00:00Z","seconds":5}]}`,
		`{"device_id":1,"account":2,"provider":3,"class":"stb","sessions":[{"channel":1,"mode":"live","start":"2026-01-01T00:00:00Z","seconds":5},]}`,
		`{"device_id":1,"account":2,"provider":3,"class":"stb","sessions":[]} `,
		`{"device_id":1,"account":2,"provider":3,"class":"stb","sessions":[`,
		``,
	} {
		sameAsRegistry(t, reg, []byte(data), false)
	}
}

func FuzzDecodeViewing(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 8 {
		data, _ := json.Marshal(randomViewing(rng))
		f.Add(data)
	}
	f.Add([]byte(`{"device_id":1,"account":2,"provider":3,"class":"stb","sessions":[{"channel":1,"mode":"live","start":"2026-01-01T00:00:00.5+03:00","seconds":-0}]}`))
	reg := viewingRegistry()
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := decodeViewing(data)
		if !ok {
			return
		}
		slow, err := reg.Decode(domain.ViewingReportedType, data)
		if err != nil || !reflect.DeepEqual(slow, fast) {
			t.Fatalf("%q: registry %#v (%v), fast %#v", data, slow, err, fast)
		}
	})
}
