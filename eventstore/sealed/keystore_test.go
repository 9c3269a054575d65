package sealed_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"tvsm/eventstore"
	"tvsm/eventstore/esdb"
	"tvsm/eventstore/esdb/esdbdouble"
	"tvsm/eventstore/memory"
	"tvsm/eventstore/sealed"
)

// keyStores are the key stores of every backend, each opened twice on the
// same data (reopen) so that durability is checked too.
func keyStores() map[string]func(t *testing.T) (open func() sealed.KeyStore) {
	return map[string]func(t *testing.T) func() sealed.KeyStore{
		"file": func(t *testing.T) func() sealed.KeyStore {
			dir := t.TempDir()
			return func() sealed.KeyStore { return fileKeys(t, dir) }
		},
		"memory": func(t *testing.T) func() sealed.KeyStore {
			k := sealed.NewMemKeys()
			return func() sealed.KeyStore { return k }
		},
		"streams of the memory store": func(t *testing.T) func() sealed.KeyStore {
			store := memory.New()
			return func() sealed.KeyStore { return streamKeys(t, store) }
		},
		"streams of EventStoreDB (protocol double)": func(t *testing.T) func() sealed.KeyStore {
			srv, err := esdbdouble.Start(t.TempDir(), "127.0.0.1:0", esdbdouble.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = srv.Close() })
			return func() sealed.KeyStore {
				s, err := esdb.Open(context.Background(), srv.URL(), esdb.Options{Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				return streamKeys(t, s)
			}
		},
	}
}

func streamKeys(t *testing.T, store eventstore.Store) sealed.KeyStore {
	t.Helper()
	k, err := sealed.NewStreamKeys(store)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestKeyStoreContract checks what erasure relies on, on every backend: a
// key created once per subject, whatever the races; erased for good,
// across a reopen; erasure idempotent, and possible before any key.
func TestKeyStoreContract(t *testing.T) {
	master := testMaster(t, 1)
	for name, setup := range keyStores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			open := setup(t)
			ks := open()
			if _, err := ks.Load(ctx, 1); !errors.Is(err, sealed.ErrNoKey) {
				t.Fatalf("load of a new subject: %v, want ErrNoKey", err)
			}
			// Concurrent first writes of one subject agree on one key.
			var wg sync.WaitGroup
			got := make([]sealed.WrappedKey, 8)
			for i := range got {
				wg.Go(func() {
					k := sealed.WrappedKey{Master: master.Fingerprint(), Data: make([]byte, 60)}
					k.Data[0] = byte(i + 1)
					var err error
					if got[i], err = ks.Create(ctx, 1, k); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			for i := range got {
				if got[i].Data[0] != got[0].Data[0] {
					t.Fatalf("concurrent creates returned different keys: %d and %d", got[0].Data[0], got[i].Data[0])
				}
			}
			if err := ks.Erase(ctx, 1); err != nil {
				t.Fatal(err)
			}
			if err := ks.Erase(ctx, 1); err != nil {
				t.Errorf("erasing again: %v", err)
			}
			if err := ks.Erase(ctx, 2); err != nil {
				t.Errorf("erasing a subject without a key: %v", err)
			}
			ks2 := open()
			for _, s := range []int64{1, 2} {
				if _, err := ks2.Load(ctx, s); !errors.Is(err, sealed.ErrErased) {
					t.Errorf("subject %d after reopen: %v, want ErrErased", s, err)
				}
				if _, err := ks2.Create(ctx, s, got[0]); !errors.Is(err, sealed.ErrErased) {
					t.Errorf("create for erased subject %d: %v, want ErrErased", s, err)
				}
			}
			if _, err := ks2.Load(ctx, 3); !errors.Is(err, sealed.ErrNoKey) {
				t.Errorf("an untouched subject: %v", err)
			}
		})
	}
}

// TestStreamKeysFirstCreateWinsAcrossNodes starts several clients of one
// EventStoreDB at once, as nodes starting together do, each creating the
// same subject's key: all end with the winner's. A loser's conflict can
// arrive before the winner's append is readable.
func TestStreamKeysFirstCreateWinsAcrossNodes(t *testing.T) {
	srv, err := esdbdouble.Start(t.TempDir(), "127.0.0.1:0", esdbdouble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	master := testMaster(t, 1)
	for round := range 5 {
		keys := make([][]byte, 4)
		var wg sync.WaitGroup
		for i := range keys {
			wg.Go(func() {
				s, err := esdb.Open(context.Background(), srv.URL(), esdb.Options{Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Error(err)
					return
				}
				defer s.Close()
				ks, err := sealed.NewStreamKeys(s)
				if err != nil {
					t.Error(err)
					return
				}
				k := sealed.WrappedKey{Master: master.Fingerprint(), Data: make([]byte, 60)}
				k.Data[0] = byte(i + 1)
				got, err := ks.Create(context.Background(), int64(100+round), k)
				if err != nil {
					t.Errorf("round %d, node %d: %v", round, i, err)
					return
				}
				keys[i] = got.Data
			})
		}
		wg.Wait()
		for i := range keys {
			if keys[i] == nil || keys[i][0] != keys[0][0] {
				t.Fatalf("round %d: nodes hold different keys", round)
			}
		}
	}
}
