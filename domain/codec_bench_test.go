package domain_test

import (
	"testing"
	"time"

	"tvsm/domain"
)

// Benchmarks of the stored JSON form of the hottest events and of event
// metadata, through the public API every consumer calls.

func benchCreated() domain.AccountCreated {
	return domain.AccountCreated{
		AccountID: 123456, Provider: 7, Login: "alice.jones", PinMD5: "81dc9bdb52d04dc20036dbd8313ed055",
		Fullname: "Алиса Джонс", Enabled: true, RemoteCustomField: ptr("ext-000123"),
		ContractInfo: ptr("contract 2026/000123"), DevicesPerAccountLimit: ptr(3),
	}
}

func benchUpdated() domain.AccountUpdated {
	return domain.AccountUpdated{AccountID: 123456, Fullname: domain.Some("Alice Jones"),
		RegionTag: domain.Null[int64](), DevicesPerAccountLimit: domain.Some(5)}
}

func benchEnvelope() domain.Envelope {
	return domain.Envelope{OccurredAt: time.Date(2026, 11, 22, 17, 59, 41, 123456789, time.UTC),
		Actor: domain.AdminActor("alice"), RequestID: "0b9c2f4e-7d1a-4c3e-9f55-2a6b8d0e1f37"}
}

func benchEncode(b *testing.B, e domain.Event) {
	reg := eventRegistry()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := reg.Encode(e); err != nil {
			b.Fatal(err)
		}
	}
}

func benchDecode(b *testing.B, e domain.Event) {
	reg := eventRegistry()
	typ, data, err := reg.Encode(e)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Decode(typ, data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeAccountCreated(b *testing.B) { benchEncode(b, benchCreated()) }
func BenchmarkDecodeAccountCreated(b *testing.B) { benchDecode(b, benchCreated()) }
func BenchmarkEncodeAccountUpdated(b *testing.B) { benchEncode(b, benchUpdated()) }
func BenchmarkDecodeAccountUpdated(b *testing.B) { benchDecode(b, benchUpdated()) }

func BenchmarkEncodeMetadata(b *testing.B) {
	env := benchEnvelope()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := domain.EncodeMetadata(env); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeMetadata(b *testing.B) {
	data, err := domain.EncodeMetadata(benchEnvelope())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := domain.DecodeMetadata(data); err != nil {
			b.Fatal(err)
		}
	}
}

// benchClaim is a claim as a node appends it for a broadcast: a thousand
// devices, the most one CommandsSent lists.
func benchClaim() domain.CommandsSent {
	devices := make([]int64, 1000)
	for i := range devices {
		devices[i] = 1_000_000 + int64(i)*7
	}
	return domain.CommandsSent{SendID: 4242, Index: 0, Devices: devices, Node: "node-3"}
}

func BenchmarkEncodeCommandsSent(b *testing.B) { benchEncode(b, benchClaim()) }
func BenchmarkDecodeCommandsSent(b *testing.B) { benchDecode(b, benchClaim()) }
