package main

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
	"tvsm/eventstore/record"
	"tvsm/eventstore/sealed"
	"tvsm/internal/app"
	"tvsm/internal/wiring/node"
)

// tvsm store encrypt on a log an older version wrote: personal values in
// plain text, a login in a stream name, an account erased since (its key
// gone). Afterwards the log holds none of them in plain text, keeps every
// event at its position, and a node on it reads the accounts as before,
// the erased one as erased.
func TestStoreEncrypt(t *testing.T) {
	isolateEnv(t)
	data := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := sealed.GenerateMasterKeyFile(node.DefaultMasterKeyFile(data)); err != nil {
		t.Fatal(err)
	}
	canaries := []string{"legacy-login-9a2b", "Legacy Person 9a2b", "9a2b Legacy Road", "legacy-uid-9a2b", "erased-login-9a2b", "Erased Person 9a2b"}
	old, err := embedded.Open(filepath.Join(data, "events"), embedded.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	rec := record.Log{Store: old, Registry: node.NewRegistry()} // below the seal: as an older version wrote
	meta := domain.Metadata{OccurredAt: time.Now().UTC(), Actor: domain.SystemActor(), RequestID: "older-version"}
	write := func(stream string, events ...domain.Event) {
		t.Helper()
		if _, err := rec.Record(context.Background(), stream, eventstore.Any, events, meta, record.Random()); err != nil {
			t.Fatal(err)
		}
	}
	write(domain.ProviderStream(1), domain.ProviderCreated{ProviderID: 1, Name: "Old ISP", Enabled: true})
	write(app.LegacyLoginStream(1, canaries[0]), app.ReservationTaken{Owner: "account-1", At: meta.OccurredAt})
	write(domain.AccountStream(1), domain.AccountCreated{AccountID: 1, Provider: 1, Login: canaries[0], Fullname: canaries[1],
		MainAddress: &canaries[2], Enabled: true})
	write(domain.AccountStream(1), domain.DeviceBound{AccountID: 1, DeviceID: 1, UniqueID: canaries[3], Class: domain.DeviceSTB})
	write(domain.AccountStream(2), domain.AccountCreated{AccountID: 2, Provider: 1, Login: canaries[4], Fullname: canaries[5], Enabled: true})
	write(domain.AccountStream(2), domain.AccountErased{AccountID: 2})
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	keys, err := sealed.OpenFileKeys(filepath.Join(data, "keys"))
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.Erase(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	_ = keys.Close()

	code, stdout, stderr := runCapture(t, "store", "encrypt", "--data", data)
	if code != exitOK || !strings.HasPrefix(stdout, "sealed 6 events") {
		t.Fatalf("tvsm store encrypt: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(data, "events.plain")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the old log is still there: %v", err)
	}

	// The log below the seal: no canary, in data or stream names.
	sealedLog, err := embedded.Open(filepath.Join(data, "events"), embedded.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sub, err := sealedLog.SubscribeAll(ctx, eventstore.Beginning, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for done := false; !done; {
		b, err := sub.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range b.Events {
			n++
			if e.Position.Commit != uint64(n) {
				t.Errorf("%s@%d moved to position %v", e.Stream, e.Revision, e.Position)
			}
			for _, c := range canaries {
				if bytes.Contains(e.Data, []byte(c)) || strings.Contains(e.Stream, c) {
					t.Errorf("%s@%d still holds %q in plain text", e.Stream, e.Revision, c)
				}
			}
		}
		done = b.CaughtUp
	}
	_ = sub.Close()
	if n != 6 {
		t.Fatalf("the sealed log holds %d events, want 6", n)
	}

	// A node on it reads the accounts as before, the erased one erased.
	n1, err := node.Start(ctx, sealedLog, node.Options{DataDir: data, Logger: slog.New(slog.DiscardHandler),
		AdminPassword: "store-encrypt", BcryptCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n1.Close(); _ = sealedLog.Close() }()
	if a, ok := n1.Model.Account(1); !ok || a.Login != canaries[0] || a.Fullname != canaries[1] {
		t.Errorf("account 1 after the rewrite: %+v, %v", a, ok)
	}
	history, err := n1.Queries.Accounts.History(ctx, app.Caller{Admin: "admin"}, 2)
	if err != nil || len(history) != 2 || history[0].Changes[1].New != domain.ErasedValue {
		t.Errorf("history of the erased account after the rewrite: %+v, %v", history, err)
	}
}
