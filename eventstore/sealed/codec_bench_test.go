package sealed

import (
	"context"
	"testing"

	"tvsm/domain"
)

// BenchmarkCodec measures one account create's event through the seal:
// sealing it for a subject whose key is cached, for a new subject (its key
// made and unwrapped), and opening it.
func BenchmarkCodec(b *testing.B) {
	reg := domain.NewRegistry()
	domain.RegisterEvents(reg)
	master := mustMaster(b)
	typ, data, err := reg.Encode(domain.AccountCreated{AccountID: 7, Provider: 1, Login: "user00000007", PinMD5: "0123456789abcdef0123456789abcdef",
		Fullname: "Ivan Petrovich Sidorov 007", Enabled: true})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("seal", func(b *testing.B) {
		ring := NewKeyring(newMemKeys(), master)
		for b.Loop() {
			if _, err := ring.seal(ctx, "account-7", typ, data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("seal-new-subject", func(b *testing.B) {
		ring := NewKeyring(newMemKeys(), master)
		ring.limit, ring.keyLimit = 1<<30, 1<<30
		i := int64(0)
		for b.Loop() {
			i++
			typ, data, _ := reg.Encode(domain.AccountCreated{AccountID: i, Provider: 1, Login: "user", Fullname: "F"})
			if _, err := ring.seal(ctx, "account-x", typ, data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("open", func(b *testing.B) {
		ring := NewKeyring(newMemKeys(), master)
		sealed, err := ring.seal(ctx, "account-7", typ, data)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, _, err := ring.open(ctx, "account-7", typ, sealed); err != nil {
				b.Fatal(err)
			}
		}
	})
}
