package domain_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"tvsm/domain"
	"tvsm/domain/domaintest"
)

// randomDevices is a device list as claims and receipts hold them: nil,
// empty, or ids, some at the ends of int64.
func randomDevices(rng *rand.Rand) []int64 {
	switch rng.IntN(8) {
	case 0:
		return nil
	case 1:
		return []int64{}
	}
	ids := make([]int64, rng.IntN(50))
	for i := range ids {
		switch rng.IntN(10) {
		case 0:
			ids[i] = []int64{0, -1, math.MaxInt64, math.MinInt64}[rng.IntN(4)]
		default:
			ids[i] = rng.Int64N(1 << 24)
		}
	}
	return ids
}

func TestDeliveryEventsJSONIsEncodingJSONs(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		send, index := rng.Int64(), rng.IntN(100)-1
		domaintest.RoundTripsLikeJSON(t, domain.CommandsSent{SendID: send, Index: index, Devices: randomDevices(rng),
			Node: []string{"", "node-1", "ü<&>\u2028", "\xff"}[rng.IntN(4)], Late: rng.IntN(2) == 0})
		domaintest.RoundTripsLikeJSON(t, domain.CommandsAcked{SendID: send, Index: index, Devices: randomDevices(rng)})
		domaintest.RoundTripsLikeJSON(t, domain.CommandsConfirmed{SendID: send, Index: index, Devices: randomDevices(rng)})
	}
}

func TestDeliveryEventsDecodeLeavesOtherFormsToEncodingJSON(t *testing.T) {
	for _, data := range []string{
		`{"send_id":1, "index":0,"devices":[1]}`,
		`{"index":0,"send_id":1,"devices":[1]}`,
		`{"send_id":1,"index":0,"devices":[1 ,2]}`,
		`{"send_id":1,"index":0,"devices":[01]}`,
		`{"send_id":1,"index":0,"devices":[1.0]}`,
		`{"send_id":1,"index":0,"devices":[1e3]}`,
		`{"send_id":1,"index":0,"devices":[9223372036854775808]}`,
		`{"send_id":1,"index":0,"devices":["1"]}`,
		`{"send_id":1,"index":0,"devices":[1,]}`,
		`{"send_id":1,"index":0,"devices":[1]`,
		`{"send_id":1,"index":0,"devices":[1]} `,
		`{"send_id":1,"index":0,"devices":[1],"extra":1}`,
		`{"send_id":1,"index":0,"devices":[1],"node":null}`,
		`{"send_id":1,"index":0,"devices":[1],"late":1}`,
		`{"send_id":1,"index":0,"devices":[1],"late":true,"node":"n"}`,
		``,
	} {
		if domaintest.DecodesLikeJSON[domain.CommandsSent](t, []byte(data)) {
			t.Errorf("CommandsSent's DecodeJSON accepted %s", data)
		}
	}
	for _, data := range []string{
		`{"send_id":1,"index":0,"devices":null}`,
		`{"send_id":1,"index":0,"devices":[]}`,
		`{"send_id":-1,"index":-0,"devices":[-0,0,-9223372036854775808]}`,
		`{"send_id":1,"index":2,"devices":[3],"node":"n\u0031","late":false}`,
	} {
		if !domaintest.DecodesLikeJSON[domain.CommandsSent](t, []byte(data)) {
			t.Errorf("CommandsSent's DecodeJSON declined %s", data)
		}
	}
	if !domaintest.DecodesLikeJSON[domain.CommandsAcked](t, []byte(`{"send_id":1,"index":0,"devices":[1,2]}`)) ||
		domaintest.DecodesLikeJSON[domain.CommandsConfirmed](t, []byte(`{"send_id":1,"index":0,"devices":[1,2],"node":"n"}`)) {
		t.Error("receipts: accepted the wrong form, or declined the right one")
	}
}

func FuzzCommandsSentJSON(f *testing.F) {
	f.Add(int64(1), 0, int64(7), 3, "node-1", true)
	f.Add(int64(-1), -1, int64(math.MinInt64), -1, "\xff<\u2028>", false)
	f.Fuzz(func(t *testing.T, send int64, index int, first int64, n int, node string, late bool) {
		var devices []int64
		if n >= 0 {
			devices = []int64{}
		}
		for i := range min(n, 8) {
			devices = append(devices, first+int64(i)*1_000_003)
		}
		domaintest.RoundTripsLikeJSON(t, domain.CommandsSent{SendID: send, Index: index, Devices: devices, Node: node, Late: late})
		domaintest.RoundTripsLikeJSON(t, domain.CommandsAcked{SendID: send, Index: index, Devices: devices})
		domaintest.RoundTripsLikeJSON(t, domain.CommandsConfirmed{SendID: send, Index: index, Devices: devices})
	})
}

// FuzzDecodeDeliveryEvents feeds arbitrary bytes to the codecs: whatever
// they accept must be what encoding/json gives.
func FuzzDecodeDeliveryEvents(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 8 {
		data, _ := json.Marshal(domain.CommandsSent{SendID: rng.Int64(), Index: rng.IntN(5), Devices: randomDevices(rng), Node: "n", Late: rng.IntN(2) == 0})
		f.Add(data)
	}
	f.Add([]byte(`{"send_id":1,"index":0,"devices":[-0,1]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		domaintest.DecodesLikeJSON[domain.CommandsSent](t, data)
		domaintest.DecodesLikeJSON[domain.CommandsAcked](t, data)
		domaintest.DecodesLikeJSON[domain.CommandsConfirmed](t, data)
	})
}
