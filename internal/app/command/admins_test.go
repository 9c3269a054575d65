package command_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"tvsm/domain"
	"tvsm/eventstore/embedded"
	"tvsm/eventstore/esdb"
	"tvsm/eventstore/esdb/esdbdouble"
	"tvsm/eventstore/memory"
	"tvsm/internal/app"
	"tvsm/internal/app/command"
	"tvsm/internal/app/query"
	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/wiring/node"
	"tvsm/projections"
	"tvsm/projections/readmodel"
)

// adminBare is the application over a fresh (in-memory) store with no
// admin at all: what a first start sees before Bootstrap.
type adminBare struct {
	cmds  *command.Commands
	qs    *query.Queries
	model *readmodel.Model
	store *memory.Store
}

func adminStartBare(t *testing.T) adminBare {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	store := memory.New()
	reg := domain.NewRegistry()
	domain.RegisterEvents(reg)
	app.RegisterEvents(reg)
	model := readmodel.New(reg)
	runner := projections.NewRunner(store, reg, model, projections.SnapshotCheckpoints{}, projections.RunnerOptions{Logger: logger})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = runner.Run(ctx)
	}()
	t.Cleanup(func() {
		stop()
		<-done
		_ = store.Close()
	})
	x, err := app.New(store, reg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	qs, err := query.New(query.Config{Model: model, Applied: runner.Progress(), Store: store, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := command.New(command.Config{Executor: x, Model: model, Applied: runner.Progress(), Queries: qs,
		BcryptCost: bcrypt.MinCost, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	return adminBare{cmds: cmds, qs: qs, model: model, store: store}
}

func adminCheckPassword(t *testing.T, m *readmodel.Model, login, password string) domain.Admin {
	t.Helper()
	a, ok := m.Admin(login)
	if !ok {
		t.Fatalf("admin %q does not exist", login)
	}
	if err := bcrypt.CompareHashAndPassword([]byte(a.PasswordHash), []byte(password)); err != nil {
		t.Fatalf("admin %q: password does not match its hash: %v", login, err)
	}
	return a
}

func TestBootstrapGeneratesPassword(t *testing.T) {
	b := adminStartBare(t)
	ctx := context.Background()
	generated, err := b.cmds.Admins.Bootstrap(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(generated) < 20 {
		t.Fatalf("generated password %q is weak", generated)
	}
	a := adminCheckPassword(t, b.model, command.DefaultBootstrapLogin, generated)
	if !a.Superadmin() {
		t.Fatalf("bootstrapped admin is scoped: %+v", a)
	}
	// Once an admin exists, Bootstrap does nothing, whatever it is given.
	head, _ := b.store.Head(ctx)
	for _, args := range [][2]string{{"", ""}, {"other", "other-password"}, {command.DefaultBootstrapLogin, "new-password"}} {
		again, err := b.cmds.Admins.Bootstrap(ctx, args[0], args[1])
		if err != nil || again != "" {
			t.Fatalf("Bootstrap(%q, %q) with an admin: %q, %v", args[0], args[1], again, err)
		}
	}
	if h, _ := b.store.Head(ctx); h != head {
		t.Fatalf("Bootstrap with an admin appended events: %v → %v", head, h)
	}
	if _, ok := b.model.Admin("other"); ok {
		t.Fatal("a second bootstrap created another admin")
	}
	adminCheckPassword(t, b.model, command.DefaultBootstrapLogin, generated)
}

func TestBootstrapGivenCredentials(t *testing.T) {
	b := adminStartBare(t)
	generated, err := b.cmds.Admins.Bootstrap(context.Background(), "ops@example.tv", "given-password")
	if err != nil || generated != "" {
		t.Fatalf("Bootstrap: %q, %v", generated, err)
	}
	adminCheckPassword(t, b.model, "ops@example.tv", "given-password")
}

func TestBootstrapRefusesBadCredentials(t *testing.T) {
	for _, args := range [][2]string{{"bad login", "long-enough"}, {"admin", "short"}, {"admin", string(make([]byte, 73))}} {
		b := adminStartBare(t)
		if _, err := b.cmds.Admins.Bootstrap(context.Background(), args[0], args[1]); err == nil {
			t.Fatalf("Bootstrap(%q, %q) succeeded", args[0], args[1])
		}
		if s := b.model.Stats(); s.Admins != 0 {
			t.Fatalf("Bootstrap(%q, %q) failed but created an admin", args[0], args[1])
		}
	}
}

func TestBootstrapConcurrent(t *testing.T) {
	b := adminStartBare(t)
	var wg sync.WaitGroup
	results := make([]string, 8)
	errs := make([]error, 8)
	for i := range results {
		wg.Go(func() { results[i], errs[i] = b.cmds.Admins.Bootstrap(context.Background(), "admin", "") })
	}
	wg.Wait()
	var winners []string
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("Bootstrap %d: %v", i, errs[i])
		}
		if r != "" {
			winners = append(winners, r)
		}
	}
	if len(winners) != 1 {
		t.Fatalf("%d bootstraps report a generated password, want 1", len(winners))
	}
	adminCheckPassword(t, b.model, "admin", winners[0])
}

// TestBootstrapNodesStartingTogetherOnEventStoreDB: nodes started at the
// same moment on a new EventStoreDB (its protocol double, on a slow disk:
// an event reaches readers 150 ms after it is written) each try to create
// the first superadmin. One does and reports the generated password; the
// others lose the append to an event they cannot read yet, wait until they
// can, find the admin and start too. Before, they gave up after five quick
// attempts and the node did not start.
func TestBootstrapNodesStartingTogetherOnEventStoreDB(t *testing.T) {
	srv, err := esdbdouble.Start(t.TempDir(), "127.0.0.1:0", esdbdouble.Options{SyncDelay: 150 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	const nodes = 3
	started := make([]*node.Node, nodes)
	errs := make([]error, nodes)
	dirs := make([]string, nodes)
	for i := range dirs {
		dirs[i] = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			store, err := esdb.Open(ctx, srv.URL(), esdb.Options{Logger: logger})
			if err != nil {
				errs[i] = err
				return
			}
			t.Cleanup(func() { _ = store.Close() })
			started[i], errs[i] = node.Start(ctx, store, node.Options{DataDir: dirs[i], Logger: logger,
				BcryptCost: bcrypt.MinCost, NodeName: fmt.Sprintf("node-%d", i), MasterKey: nodetest.SharedMasterKey})
			if started[i] != nil {
				t.Cleanup(func() { _ = started[i].Close() })
			}
		})
	}
	wg.Wait()
	var passwords []string
	for i, n := range started {
		if errs[i] != nil {
			t.Fatalf("node %d did not start: %v", i, errs[i])
		}
		if n.GeneratedPassword != "" {
			passwords = append(passwords, n.GeneratedPassword)
		}
	}
	if len(passwords) != 1 {
		t.Fatalf("%d nodes report a generated password, want 1", len(passwords))
	}
	for i, n := range started {
		// The nodes that did not create the admin see it once their read
		// model has applied the winner's event.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, ok := n.Model.Admin(node.DefaultAdminLogin); ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d has no admin 30 s after it started", i)
			}
		}
		adminCheckPassword(t, n.Model, node.DefaultAdminLogin, passwords[0])
	}
}

// TestBootstrapThroughNode starts a node on a fresh store without a
// password (it generates one and reports it once), then restarts it on the
// same data (no second admin, no password).
func TestBootstrapThroughNode(t *testing.T) {
	dir := t.TempDir()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	start := func() (*node.Node, func()) {
		store, err := embedded.Open(filepath.Join(dir, "events"), embedded.Options{Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		n, err := node.Start(ctx, store, node.Options{DataDir: filepath.Join(dir, "node"), Logger: logger, BcryptCost: bcrypt.MinCost})
		if err != nil {
			_ = store.Close()
			t.Fatal(err)
		}
		var once sync.Once
		stop := func() { once.Do(func() { _ = n.Close(); _ = store.Close() }) }
		t.Cleanup(stop)
		return n, stop
	}
	n, stop := start()
	if n.GeneratedPassword == "" {
		t.Fatal("no password generated on a fresh store")
	}
	adminCheckPassword(t, n.Model, node.DefaultAdminLogin, n.GeneratedPassword)
	password := n.GeneratedPassword
	stop()

	n, _ = start()
	if n.GeneratedPassword != "" {
		t.Fatalf("a restart generated another password %q", n.GeneratedPassword)
	}
	adminCheckPassword(t, n.Model, node.DefaultAdminLogin, password)
	if s := n.Model.Stats(); s.Admins != 1 {
		t.Fatalf("%d admins after a restart, want 1", s.Admins)
	}
}

// TestCreateAdminKeyedRetryFindsItsAdmin: a keyed create that finds the
// admin already there with the same password and scope (a retry of an
// interrupted attempt, whose bcrypt hash was salted differently) answers
// with it; with another password it is a conflict.
func TestCreateAdminKeyedRetryFindsItsAdmin(t *testing.T) {
	b := adminStartBare(t)
	ctx := context.Background()
	if _, err := b.cmds.Admins.Bootstrap(ctx, "root", "root-password"); err != nil {
		t.Fatal(err)
	}
	root := app.Caller{Admin: "root", RequestID: "r1"}
	f := command.AdminFields{Login: domain.Some("ops"), Password: domain.Some("ops-password")}
	if _, err := b.cmds.Admins.Create(ctx, root, f); err != nil {
		t.Fatal(err)
	}
	keyed := root
	keyed.IdempotencyKey = "k1"
	a, err := b.cmds.Admins.Create(ctx, keyed, f)
	if err != nil || a.Login != "ops" {
		t.Fatalf("keyed create of the same admin: %q, %v", a.Login, err)
	}
	keyed.IdempotencyKey = "k2"
	other := f
	other.Password = domain.Some("other-password")
	if _, err := b.cmds.Admins.Create(ctx, keyed, other); !errors.Is(err, domain.ErrAlreadyExists) {
		t.Fatalf("keyed create with another password: %v, want ErrAlreadyExists", err)
	}
	if _, err := b.cmds.Admins.Create(ctx, root, f); !errors.Is(err, domain.ErrAlreadyExists) {
		t.Fatalf("unkeyed create of an existing admin: %v, want ErrAlreadyExists", err)
	}
	adminCheckPassword(t, b.model, "ops", "ops-password")
}

// TestAdminScopeErrors checks the answers to scoped callers without HTTP:
// errors match app.ErrForbidden.
func TestAdminScopeErrors(t *testing.T) {
	b := adminStartBare(t)
	ctx := context.Background()
	if _, err := b.cmds.Admins.Bootstrap(ctx, "root", "root-password"); err != nil {
		t.Fatal(err)
	}
	root := app.Caller{Admin: "root", RequestID: "r1"}
	for _, name := range []string{"A", "B"} {
		if _, err := b.cmds.Providers.Create(ctx, root, command.ProviderFields{Name: domain.Some(name)}); err != nil {
			t.Fatal(err)
		}
	}
	one, two := int64(1), int64(2)
	scoped := app.Caller{Admin: "ops", Scope: &one, RequestID: "r2"}
	if _, err := b.cmds.Tariffs.Create(ctx, scoped, command.TariffFields{Provider: domain.Some(two), Name: domain.Some("T")}); !errors.Is(err, app.ErrForbidden) {
		t.Fatalf("scoped tariff of another provider: %v", err)
	}
	if _, err := b.qs.Providers.Get(ctx, scoped, two); !errors.Is(err, app.ErrForbidden) {
		t.Fatalf("scoped read of another provider: %v", err)
	}
	if _, err := b.cmds.Categories.Delete(ctx, scoped, 1); !errors.Is(err, app.ErrForbidden) {
		t.Fatalf("scoped category delete: %v", err)
	}
	if _, err := b.qs.Providers.Get(ctx, scoped, one); err != nil {
		t.Fatalf("scoped read of its own provider: %v", err)
	}
}
