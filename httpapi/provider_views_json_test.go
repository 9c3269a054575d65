package httpapi

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

func sameAsEncodingJSON(t *testing.T, a providerAccountJSON) {
	t.Helper()
	want, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.appendJSON([]byte("x")); string(got) != "x"+string(want) {
		t.Fatalf("appendJSON:\n%s\nencoding/json:\n%s", got[1:], want)
	}
}

func randomAccountJSON(rng *rand.Rand, text string) providerAccountJSON {
	strs := []string{"", "bob", text, "<&> \u2028 \xff \"q\" \\ \t", "Ünïcødé"}
	str := func() string { return strs[rng.IntN(len(strs))] }
	ptr := func() *string {
		if rng.IntN(3) == 0 {
			return nil
		}
		s := str()
		return &s
	}
	a := providerAccountJSON{ID: rng.Int64(), Enabled: rng.IntN(2) == 0, Login: str(), Fullname: str(), Provider: rng.Int64N(1000) - 1,
		RemoteCustomField: ptr(), ContractInfo: ptr(), MainAddress: ptr(), AccountDesc: ptr(), PinMD5: ptr(),
		ServicesAvailable: rng.IntN(2) == 0}
	if rng.IntN(2) == 0 {
		n := rng.IntN(100) - 50
		a.DevicesPerAccountLimit = &n
	}
	num := func() *int64 {
		if rng.IntN(4) == 0 {
			return nil
		}
		n := rng.Int64() - rng.Int64()
		return &n
	}
	a.RegionTag, a.Created, a.Updated, a.LastOnline = num(), num(), num(), num()
	if rng.IntN(5) == 0 {
		a.ProviderDTO, a.RegionDTO = &struct{}{}, &struct{}{}
	}
	return a
}

func TestProviderAccountJSONIsEncodingJSONs(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		sameAsEncodingJSON(t, randomAccountJSON(rng, "text"))
	}
}

func FuzzProviderAccountJSON(f *testing.F) {
	f.Add(uint64(1), "ann <&>")
	f.Add(uint64(7), "\xff\xfe\u2029")
	f.Fuzz(func(t *testing.T, seed uint64, text string) {
		rng := rand.New(rand.NewPCG(seed, seed>>1))
		sameAsEncodingJSON(t, randomAccountJSON(rng, text))
	})
}
