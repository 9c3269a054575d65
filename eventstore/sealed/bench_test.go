package sealed_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
	"tvsm/eventstore/sealed"
)

// BenchmarkSealedCreates measures what sealing adds to an account create
// on the embedded store: the create's AppendMulti (a login reservation and
// the account's AccountCreated) with and without the seal, whose first
// write of a subject also creates and syncs its key. Plain and sealed run
// in alternating slices of about 100 ms on two stores of one disk, so a
// drifting disk slows both alike; it reports creates/s of each and their
// ratio.
func BenchmarkSealedCreates(b *testing.B) {
	reg := registry()
	for _, clients := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			plain := openEmbedded(b)
			keys := fileKeys(b, b.TempDir())
			sealedStore := sealed.Wrap(openEmbedded(b), sealed.NewKeyring(keys, testMaster(b, 1)))
			create := func(store eventstore.Store) func(i int) error {
				multi := store.(eventstore.MultiAppender)
				return func(i int) error {
					typ, data, err := reg.Encode(domain.AccountCreated{AccountID: int64(i + 1), Provider: 1, Login: "user" + strconv.Itoa(i),
						PinMD5: "0123456789abcdef0123456789abcdef", Fullname: "Subscriber " + strconv.Itoa(i), Enabled: true,
						MainAddress: ptr("1 Main Street, flat " + strconv.Itoa(i)), ContractInfo: ptr("C-" + strconv.Itoa(i))})
					if err != nil {
						return err
					}
					_, err = multi.AppendMulti(context.Background(),
						eventstore.StreamAppend{Stream: "login-1-h" + strconv.Itoa(i), Expect: eventstore.NoStream,
							Events: []eventstore.EventData{{ID: eventstore.NewEventID(), Type: "ReservationTaken.v1", Data: []byte(`{"owner":"account-` + strconv.Itoa(i+1) + `"}`)}}},
						eventstore.StreamAppend{Stream: domain.AccountStream(int64(i + 1)), Expect: eventstore.NoStream,
							Events: []eventstore.EventData{{ID: eventstore.NewEventID(), Type: typ, Data: data, Metadata: []byte(`{}`)}}})
					return err
				}
			}
			alternate(b, clients, create(plain), create(sealedStore), "plain", "sealed")
		})
	}
}

// BenchmarkSealedReplay measures reading a log of account creates and
// updates through the seal against reading it plain: events/s of each.
func BenchmarkSealedReplay(b *testing.B) {
	reg := registry()
	inner := openEmbedded(b)
	store := sealed.Wrap(inner, sealed.NewKeyring(fileKeys(b, b.TempDir()), testMaster(b, 1)))
	const accounts = 5000
	ctx := context.Background()
	for i := range accounts {
		events := []domain.Event{
			domain.AccountCreated{AccountID: int64(i + 1), Provider: 1, Login: "user" + strconv.Itoa(i), Fullname: "Subscriber " + strconv.Itoa(i), Enabled: true},
			domain.AccountUpdated{AccountID: int64(i + 1), Fullname: domain.Some("Renamed " + strconv.Itoa(i))},
			domain.SubscriptionAdded{AccountID: int64(i + 1), SubscriptionID: int64(i + 1), Tariff: 1, Start: time.Unix(1e9, 0).UTC()},
			domain.DeviceBound{AccountID: int64(i + 1), DeviceID: int64(i + 1), UniqueID: "uid-" + strconv.Itoa(i), Class: domain.DeviceSTB},
		}
		data := make([]eventstore.EventData, len(events))
		for j, e := range events {
			typ, body, err := reg.Encode(e)
			if err != nil {
				b.Fatal(err)
			}
			data[j] = eventstore.EventData{ID: eventstore.NewEventID(), Type: typ, Data: body, Metadata: []byte(`{}`)}
		}
		if _, err := store.Append(ctx, domain.AccountStream(int64(i+1)), eventstore.NoStream, data...); err != nil {
			b.Fatal(err)
		}
	}
	for _, side := range []struct {
		name  string
		store eventstore.Store
	}{{"plain", inner}, {"sealed", store}, {"plain", inner}, {"sealed", store}} {
		b.Run(side.name, func(b *testing.B) {
			n := 0
			for b.Loop() {
				n += len(readAllB(b, side.store))
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

func readAllB(b *testing.B, store eventstore.Store) []eventstore.RecordedEvent {
	ctx := context.Background()
	sub, err := store.SubscribeAll(ctx, eventstore.Beginning, eventstore.Filter{})
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Close()
	var out []eventstore.RecordedEvent
	for {
		batch, err := sub.Recv(ctx)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, batch.Events...)
		if batch.CaughtUp {
			return out
		}
	}
}

func openEmbedded(b *testing.B) *embedded.Store {
	s, err := embedded.Open(b.TempDir(), embedded.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// alternate runs b.N operations of each of two kinds from clients
// goroutines, in alternating slices of about 100 ms, and reports each
// kind's operations per second and the second's share of the first's.
func alternate(b *testing.B, clients int, first, second func(i int) error, firstName, secondName string) {
	var next atomic.Int64 // operation numbers, shared: every operation is new
	run := func(op func(int) error, n int) time.Duration {
		started := time.Now()
		var wg sync.WaitGroup
		var left atomic.Int64
		left.Store(int64(n))
		for range clients {
			wg.Go(func() {
				for left.Add(-1) >= 0 {
					if err := op(int(next.Add(1))); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		return time.Since(started)
	}
	var took [2]time.Duration
	slice := max(clients, 8)
	for done := 0; done < b.N; {
		n := min(slice, b.N-done)
		d0, d1 := run(first, n), run(second, n)
		took[0] += d0
		took[1] += d1
		done += n
		if d0 < 100*time.Millisecond && d1 < 100*time.Millisecond {
			slice *= 2
		}
	}
	r0, r1 := float64(b.N)/took[0].Seconds(), float64(b.N)/took[1].Seconds()
	b.ReportMetric(r0, firstName+"/s")
	b.ReportMetric(r1, secondName+"/s")
	b.ReportMetric(r1/r0, secondName+"/"+firstName)
}
