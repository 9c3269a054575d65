package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/internal/app"
	"tvsm/internal/service"
	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/testkit/testutil"
	"tvsm/projections/readmodel"
)

var root = service.Caller{Admin: nodetest.SuperLogin, RequestID: "test"}

func encodeID(v service.AccountView) ([]byte, error) { return json.Marshal(v.ID) }

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

func accountInput(provider int64, login string) service.AccountInput {
	return service.AccountInput{
		Provider: domain.Some(provider),
		Login:    domain.Some(login),
		PinMD5:   domain.Some("0123456789abcdef0123456789abcdef"),
		Fullname: domain.Some("Name of " + login),
	}
}

func create(t *testing.T, svc *service.Service, c service.Caller, in service.AccountInput) int64 {
	t.Helper()
	body, err := svc.CreateAccount(context.Background(), c, in, encodeID)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	var id int64
	if err := json.Unmarshal(body, &id); err != nil {
		t.Fatal(err)
	}
	return id
}

func holder(t *testing.T, env *nodetest.Env, provider int64, login string) string {
	t.Helper()
	h, err := env.Node.Executor.Holder(context.Background(), app.LoginStream(provider, login))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestLoginReservationFollowsTheAccount(t *testing.T) {
	env := nodetest.Start(t)
	svc := env.Node.Service
	ctx := context.Background()
	p := provider(t, env, "Acme")
	id := create(t, svc, root, accountInput(p, "anna"))
	owner := domain.AccountStream(id)
	if h := holder(t, env, p, "anna"); h != owner {
		t.Fatalf("holder of anna: %q, want %q", h, owner)
	}

	if _, err := svc.UpdateAccount(ctx, root, id, service.AccountInput{Login: domain.Some("anna2")}); err != nil {
		t.Fatal(err)
	}
	if h := holder(t, env, p, "anna"); h != "" {
		t.Fatalf("old login still held by %q", h)
	}
	if h := holder(t, env, p, "anna2"); h != owner {
		t.Fatalf("new login held by %q", h)
	}
	// A refused update gives the login it reserved back.
	_, err := svc.UpdateAccount(ctx, root, id, service.AccountInput{Login: domain.Some("anna3"), Provider: domain.Some(p + 1)})
	var v *domain.ValidationError
	if !errors.As(err, &v) || v.Fields["provider"] == "" {
		t.Fatalf("provider change: %v", err)
	}
	if h := holder(t, env, p, "anna3"); h != "" {
		t.Fatalf("refused update left anna3 held by %q", h)
	}

	if _, err := svc.DeleteAccount(ctx, root, id); err != nil {
		t.Fatal(err)
	}
	if h := holder(t, env, p, "anna2"); h != "" {
		t.Fatalf("deleted account's login held by %q", h)
	}
}

func TestCreateAccountTakesOverAnOrphanedReservation(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	env := nodetest.StartWith(t, nodetest.Options{Clock: clock.Now})
	svc := env.Node.Service
	p := provider(t, env, "Acme")
	// A node reserved the login for an account it never created (it
	// crashed between the two appends).
	err := env.Node.Executor.Reserve(context.Background(), app.LoginStream(p, "ghost"), domain.AccountStream(999999),
		app.RequestMeta{Actor: domain.SystemActor(), RequestID: "crashed"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Within the grace period the login is taken...
	_, err = svc.CreateAccount(context.Background(), root, accountInput(p, "ghost"), encodeID)
	var v *domain.ValidationError
	if !errors.As(err, &v) || v.Fields["login"] != "already taken" {
		t.Fatalf("within the grace period: %v", err)
	}
	// ...after it, the dead owner's reservation is taken over.
	clock.Advance(2 * time.Minute)
	id := create(t, svc, root, accountInput(p, "ghost"))
	if h := holder(t, env, p, "ghost"); h != domain.AccountStream(id) {
		t.Fatalf("holder %q", h)
	}
}

func TestServiceScopeChecks(t *testing.T) {
	env := nodetest.Start(t)
	svc := env.Node.Service
	ctx := context.Background()
	acme := provider(t, env, "Acme")
	other := provider(t, env, "Other")
	theirs := create(t, svc, root, accountInput(other, "theirs"))
	mine := create(t, svc, root, accountInput(acme, "mine"))
	scoped := service.Caller{Admin: "acme-admin", Scope: &acme, RequestID: "test"}

	for name, err := range map[string]error{
		"get":     second(svc.Account(ctx, scoped, theirs)),
		"update":  second(svc.UpdateAccount(ctx, scoped, theirs, service.AccountInput{Fullname: domain.Some("x")})),
		"delete":  second(svc.DeleteAccount(ctx, scoped, theirs)),
		"history": second(svc.AccountHistory(ctx, scoped, theirs)),
		"create":  second(svc.CreateAccount(ctx, scoped, accountInput(other, "x"), encodeID)),
	} {
		if !errors.Is(err, service.ErrForbidden) {
			t.Errorf("%s: %v, want ErrForbidden", name, err)
		}
	}
	l, err := svc.ListAccounts(ctx, scoped, readmodel.AccountQuery{Scope: readmodel.AllProviders})
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
	page, err := svc.Changes(ctx, scoped, eventstore.Beginning, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range page.Changes {
		if ch.Entity == service.EntityAccount && ch.ID == theirs || ch.Entity == service.EntityProvider && ch.ID == other {
			t.Fatalf("scoped feed shows %+v", ch)
		}
	}
}

func TestCreateAccountIdempotencyKeyInProgress(t *testing.T) {
	env := nodetest.Start(t)
	svc := env.Node.Service
	ctx := context.Background()
	p := provider(t, env, "Acme")
	keyed := root
	keyed.IdempotencyKey = "k-1"
	in := accountInput(p, "anna")

	// The first attempt holds the key while it renders its answer.
	rendering, release := make(chan struct{}), make(chan struct{})
	type result struct {
		body []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		body, err := svc.CreateAccount(ctx, keyed, in, func(v service.AccountView) ([]byte, error) {
			close(rendering)
			<-release
			return encodeID(v)
		})
		done <- result{body, err}
	}()
	<-rendering
	_, err := svc.CreateAccount(ctx, keyed, in, encodeID)
	if !errors.Is(err, app.ErrIdempotencyInProgress) {
		t.Fatalf("retry while the first attempt runs: %v, want ErrIdempotencyInProgress (409)", err)
	}
	close(release)
	first := <-done
	if first.err != nil {
		t.Fatal(first.err)
	}
	// Once it is done, a retry gets its answer.
	again, err := svc.CreateAccount(ctx, keyed, in, encodeID)
	if err != nil || string(again) != string(first.body) {
		t.Fatalf("retry after: %s %v, want %s", again, err, first.body)
	}
	// The same key for another request: a mismatch (422).
	other := accountInput(p, "boris")
	if _, err := svc.CreateAccount(ctx, keyed, other, encodeID); !errors.Is(err, app.ErrIdempotencyMismatch) {
		t.Fatalf("other request, same key: %v", err)
	}
}

func second[T any](_ T, err error) error { return err }
