package command_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/internal/app"
	"tvsm/internal/app/command"
	"tvsm/internal/app/query"
	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/testkit/testutil"
	"tvsm/projections/readmodel"
)

var root = app.Caller{Admin: nodetest.SuperLogin, RequestID: "test"}

// provider creates a provider with the domain command, as the Admin API
// does, and waits until the read model shows it.
func provider(t *testing.T, env *nodetest.Env, name string) int64 {
	t.Helper()
	ctx := context.Background()
	x := env.Node.Executor
	id, err := x.NextID(ctx, "provider")
	if err != nil {
		t.Fatal(err)
	}
	cmd := domain.CreateProvider{ID: id, Name: name}
	res, err := app.Execute(ctx, x, cmd.Stream(), domain.ProviderDecider(), domain.ProviderCommand(cmd),
		app.RequestMeta{Actor: domain.AdminActor(nodetest.SuperLogin), RequestID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := app.WaitApplied(ctx, env.Node.Runner.Progress(), res.Position, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	return id
}

func accountInput(provider int64, login string) command.AccountInput {
	return command.AccountInput{
		Provider: domain.Some(provider),
		Login:    domain.Some(login),
		PinMD5:   domain.Some("0123456789abcdef0123456789abcdef"),
		Fullname: domain.Some("Name of " + login),
	}
}

func create(t *testing.T, cmds *command.Commands, c app.Caller, in command.AccountInput) int64 {
	t.Helper()
	v, err := cmds.Accounts.Create(context.Background(), c, in)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return v.ID
}

func holder(t *testing.T, env *nodetest.Env, provider int64, login string) string {
	t.Helper()
	h, err := env.Node.Executor.Holder(context.Background(), env.Node.Executor.LoginStream(provider, login))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestLoginReservationFollowsTheAccount(t *testing.T) {
	env := nodetest.Start(t)
	cmds := env.Node.Commands
	ctx := context.Background()
	p := provider(t, env, "Acme")
	id := create(t, cmds, root, accountInput(p, "anna"))
	owner := domain.AccountStream(id)
	if h := holder(t, env, p, "anna"); h != owner {
		t.Fatalf("holder of anna: %q, want %q", h, owner)
	}

	if _, err := cmds.Accounts.Update(ctx, root, id, command.AccountInput{Login: domain.Some("anna2")}); err != nil {
		t.Fatal(err)
	}
	if h := holder(t, env, p, "anna"); h != "" {
		t.Fatalf("old login still held by %q", h)
	}
	if h := holder(t, env, p, "anna2"); h != owner {
		t.Fatalf("new login held by %q", h)
	}
	// A refused update gives the login it reserved back.
	_, err := cmds.Accounts.Update(ctx, root, id, command.AccountInput{Login: domain.Some("anna3"), Provider: domain.Some(p + 1)})
	var v *domain.ValidationError
	if !errors.As(err, &v) || v.Fields["provider"] == "" {
		t.Fatalf("provider change: %v", err)
	}
	if h := holder(t, env, p, "anna3"); h != "" {
		t.Fatalf("refused update left anna3 held by %q", h)
	}

	if _, err := cmds.Accounts.Delete(ctx, root, id); err != nil {
		t.Fatal(err)
	}
	if h := holder(t, env, p, "anna2"); h != "" {
		t.Fatalf("deleted account's login held by %q", h)
	}
}

func TestCreateAccountTakesOverAnOrphanedReservation(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	env := nodetest.StartWith(t, nodetest.Options{Clock: clock.Now})
	cmds := env.Node.Commands
	p := provider(t, env, "Acme")
	// A node reserved the login for an account it never created (it
	// crashed between the two appends).
	err := env.Node.Executor.Reserve(context.Background(), env.Node.Executor.LoginStream(p, "ghost"), domain.AccountStream(999999),
		app.RequestMeta{Actor: domain.SystemActor(), RequestID: "crashed"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Within the grace period the login is taken...
	_, err = cmds.Accounts.Create(context.Background(), root, accountInput(p, "ghost"))
	var v *domain.ValidationError
	if !errors.As(err, &v) || v.Fields["login"] != "already taken" {
		t.Fatalf("within the grace period: %v", err)
	}
	// ...after it, the dead owner's reservation is taken over.
	clock.Advance(2 * time.Minute)
	id := create(t, cmds, root, accountInput(p, "ghost"))
	if h := holder(t, env, p, "ghost"); h != domain.AccountStream(id) {
		t.Fatalf("holder %q", h)
	}
}

// A crash in the middle of a login change leaves a reservation whose owner
// exists but has another login: the new login reserved before the account
// changed, or the old one not yet released after. Either is taken over
// once older than the grace period.
func TestCreateAccountTakesOverALoginItsOwnerDoesNotHave(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	env := nodetest.StartWith(t, nodetest.Options{Clock: clock.Now})
	cmds := env.Node.Commands
	p := provider(t, env, "Acme")
	id := create(t, cmds, root, accountInput(p, "old"))
	meta := app.RequestMeta{Actor: domain.SystemActor(), RequestID: "crashed"}
	// Crashed after reserving "next", before changing the account.
	if err := env.Node.Executor.Reserve(context.Background(), env.Node.Executor.LoginStream(p, "next"), domain.AccountStream(id), meta, nil); err != nil {
		t.Fatal(err)
	}
	// Changed the account to "new", crashed before releasing "old".
	if err := env.Node.Executor.Reserve(context.Background(), env.Node.Executor.LoginStream(p, "new"), domain.AccountStream(id), meta, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Execute(context.Background(), env.Node.Executor, domain.AccountStream(id), domain.AccountDecider(),
		domain.AccountCommand(domain.UpdateAccount{ID: id, Login: domain.Some("new")}), meta); err != nil {
		t.Fatal(err)
	}
	for _, login := range []string{"next", "old"} {
		_, err := cmds.Accounts.Create(context.Background(), root, accountInput(p, login))
		var v *domain.ValidationError
		if !errors.As(err, &v) || v.Fields["login"] != "already taken" {
			t.Fatalf("%s within the grace period: %v", login, err)
		}
	}
	// The login the account has stays its own, however old.
	clock.Advance(2 * time.Minute)
	if _, err := cmds.Accounts.Create(context.Background(), root, accountInput(p, "new")); err == nil {
		t.Fatal("the account's own login was taken over")
	}
	for _, login := range []string{"next", "old"} {
		other := create(t, cmds, root, accountInput(p, login))
		if h := holder(t, env, p, login); h != domain.AccountStream(other) {
			t.Fatalf("%s held by %q after the grace period, want the new account", login, h)
		}
	}
}

func TestScopeChecks(t *testing.T) {
	env := nodetest.Start(t)
	cmds, qs := env.Node.Commands, env.Node.Queries
	ctx := context.Background()
	acme := provider(t, env, "Acme")
	other := provider(t, env, "Other")
	theirs := create(t, cmds, root, accountInput(other, "theirs"))
	mine := create(t, cmds, root, accountInput(acme, "mine"))
	scoped := app.Caller{Admin: "acme-admin", Scope: &acme, RequestID: "test"}

	for name, err := range map[string]error{
		"get":     second(qs.Accounts.Get(ctx, scoped, theirs)),
		"update":  second(cmds.Accounts.Update(ctx, scoped, theirs, command.AccountInput{Fullname: domain.Some("x")})),
		"delete":  second(cmds.Accounts.Delete(ctx, scoped, theirs)),
		"history": second(qs.Accounts.History(ctx, scoped, theirs)),
		"create":  second(cmds.Accounts.Create(ctx, scoped, accountInput(other, "x"))),
	} {
		if !errors.Is(err, app.ErrForbidden) {
			t.Errorf("%s: %v, want ErrForbidden", name, err)
		}
	}
	l, err := qs.Accounts.List(ctx, scoped, readmodel.AccountQuery{Scope: readmodel.AllProviders})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for a := range l.Items {
		got = append(got, a.ID)
	}
	if len(got) != 1 || got[0] != mine || l.Total != 1 {
		t.Fatalf("scoped list %v (total %d): a caller's scope must override the query's", got, l.Total)
	}
	page, err := qs.Changes.After(ctx, scoped, eventstore.Beginning, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range page.Changes {
		if ch.Entity == query.EntityAccount && ch.ID == theirs || ch.Entity == query.EntityProvider && ch.ID == other {
			t.Fatalf("scoped feed shows %+v", ch)
		}
	}
}

// TestCreateAccountIdempotencyKeyInProgress runs a create inside
// app.Executor.Idempotent, as the HTTP layer does with an Idempotency-Key:
// a retry while the first attempt runs is refused, a retry after it gets
// the recorded answer, and the key with another request is a mismatch.
func TestCreateAccountIdempotencyKeyInProgress(t *testing.T) {
	env := nodetest.Start(t)
	cmds, x := env.Node.Commands, env.Node.Executor
	ctx := context.Background()
	p := provider(t, env, "Acme")
	keyed := root
	keyed.IdempotencyKey = "k-1"
	request := func(in command.AccountInput) app.IdempotentRequest {
		return app.IdempotentRequest{Key: keyed.IdempotencyKey, Scope: "admin:" + keyed.Admin + " create account",
			Body: fmt.Appendf(nil, "account %#v", in), Meta: keyed.Meta()}
	}
	createKeyed := func(in command.AccountInput, rendered func()) ([]byte, error) {
		_, body, err := x.Idempotent(ctx, request(in), func(ctx context.Context) (int, []byte, error) {
			v, err := cmds.Accounts.Create(ctx, keyed, in)
			if err != nil {
				return 0, nil, err
			}
			rendered()
			body, err := json.Marshal(v.ID)
			return 200, body, err
		})
		return body, err
	}
	in := accountInput(p, "anna")

	// The first attempt holds the key while it renders its answer.
	rendering, release := make(chan struct{}), make(chan struct{})
	type result struct {
		body []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		body, err := createKeyed(in, func() {
			close(rendering)
			<-release
		})
		done <- result{body, err}
	}()
	<-rendering
	_, err := createKeyed(in, func() {})
	if !errors.Is(err, app.ErrIdempotencyInProgress) {
		t.Fatalf("retry while the first attempt runs: %v, want ErrIdempotencyInProgress (409)", err)
	}
	close(release)
	first := <-done
	if first.err != nil {
		t.Fatal(first.err)
	}
	// Once it is done, a retry gets its answer.
	again, err := createKeyed(in, func() {})
	if err != nil || string(again) != string(first.body) {
		t.Fatalf("retry after: %s %v, want %s", again, err, first.body)
	}
	// The same key for another request: a mismatch (422).
	other := accountInput(p, "boris")
	if _, err := createKeyed(other, func() {}); !errors.Is(err, app.ErrIdempotencyMismatch) {
		t.Fatalf("other request, same key: %v", err)
	}
}

func second[T any](_ T, err error) error { return err }

// A store written before logins were hashed holds them in streams named
// after the login: a live account's legacy reservation still keeps the
// login taken, and stops doing so once the account no longer has it.
func TestLegacyLoginReservationsStillHold(t *testing.T) {
	env := nodetest.Start(t)
	cmds, x := env.Node.Commands, env.Node.Executor
	ctx := context.Background()
	p := provider(t, env, "Acme")
	// The account as an older version wrote it: its events, and its login
	// held by "login-{provider}-{login}".
	id, err := x.NextID(ctx, "account")
	if err != nil {
		t.Fatal(err)
	}
	meta := app.RequestMeta{Actor: domain.SystemActor(), RequestID: "older-version"}
	cmd := domain.CreateAccount{ID: id, Provider: p, Login: "veteran", PinMD5: "", Fullname: "Old Timer"}
	if _, err := app.Execute(ctx, x, cmd.Stream(), domain.AccountDecider(), domain.AccountCommand(cmd), meta); err != nil {
		t.Fatal(err)
	}
	if err := x.Reserve(ctx, app.LegacyLoginStream(p, "veteran"), domain.AccountStream(id), meta, nil); err != nil {
		t.Fatal(err)
	}
	pos, err := env.Store.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	env.WaitApplied(t, pos)

	_, err = cmds.Accounts.Create(ctx, root, accountInput(p, "veteran"))
	var v *domain.ValidationError
	if !errors.As(err, &v) || v.Fields["login"] != "already taken" {
		t.Fatalf("a login held by a legacy reservation: %v", err)
	}
	if _, err := cmds.Accounts.Update(ctx, root, id, command.AccountInput{Login: domain.Some("veteran2")}); err != nil {
		t.Fatal(err)
	}
	create(t, cmds, root, accountInput(p, "veteran"))
}

// A keyed create whose account was made but whose answer was never
// recorded (the node died in between, or the attempt failed after the
// create) is done again by the retry with the same key: the retry must
// find its own account, already in the read model, and answer it, not
// refuse the login as taken.
func TestCreateAccountRetriedAfterItsAnswerWasLost(t *testing.T) {
	env := nodetest.Start(t)
	cmds, x := env.Node.Commands, env.Node.Executor
	ctx := context.Background()
	p := provider(t, env, "Acme")
	keyed := root
	keyed.IdempotencyKey = "k-lost"
	in := accountInput(p, "anna")
	req := app.IdempotentRequest{Key: keyed.IdempotencyKey, Scope: "admin:" + keyed.Admin + " create account",
		Body: fmt.Appendf(nil, "account %#v", in), Meta: keyed.Meta()}
	// Given a first attempt that created the account, then failed before
	// its answer was recorded.
	lost := errors.New("the answer was lost")
	var first int64
	_, _, err := x.Idempotent(ctx, req, func(ctx context.Context) (int, []byte, error) {
		v, err := cmds.Accounts.Create(ctx, keyed, in)
		if err != nil {
			return 0, nil, err
		}
		first = v.ID
		return 0, nil, lost
	})
	if !errors.Is(err, lost) || first == 0 {
		t.Fatalf("first attempt: id %d, %v", first, err)
	}
	// When the request is sent again with its key.
	var again int64
	status, _, err := x.Idempotent(ctx, req, func(ctx context.Context) (int, []byte, error) {
		v, err := cmds.Accounts.Create(ctx, keyed, in)
		if err != nil {
			return 0, nil, err
		}
		again = v.ID
		return 200, nil, nil
	})
	// Then it answers the account the first attempt made, the only one.
	if err != nil || status != 200 || again != first {
		t.Fatalf("retry: %d, id %d, %v; want 200 and id %d", status, again, err, first)
	}
	if h := holder(t, env, p, "anna"); h != domain.AccountStream(first) {
		t.Errorf("holder of anna: %q, want %q", h, domain.AccountStream(first))
	}
}
