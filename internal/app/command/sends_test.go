package command_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/internal/app"
	"tvsm/internal/app/command"
	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/testkit/testutil"
)

var sendT0 = time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)

func sendOf(t *testing.T, cmds *command.Commands, c app.Caller, in command.SendInput) int64 {
	t.Helper()
	id, err := cmds.Sends.Send(context.Background(), c, in)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	return id
}

func restartTo(r domain.Recipients, ids ...int64) command.SendInput {
	return command.SendInput{Recipients: r, IDs: ids,
		Commands: []domain.CommandSpec{{Kind: domain.CommandRestart, Object: json.RawMessage(`{"command":"restart"}`)}}}
}

func TestSendCommandsScope(t *testing.T) {
	clock := testutil.NewClock(sendT0)
	env := nodetest.StartWith(t, nodetest.Options{Clock: clock.Now})
	cmds, qs := env.Node.Commands, env.Node.Queries
	ctx := context.Background()
	pA, pB := provider(t, env, "A"), provider(t, env, "B")
	a1, b1 := create(t, cmds, root, accountInput(pA, "a1")), create(t, cmds, root, accountInput(pB, "b1"))
	opsA := app.Caller{Admin: "ops-a", Scope: new(pA), RequestID: "t"}
	opsB := app.Caller{Admin: "ops-b", Scope: new(pB), RequestID: "t"}

	ofA := sendOf(t, cmds, root, restartTo(domain.RecipientAccounts, a1))
	spanning := sendOf(t, cmds, root, restartTo(domain.RecipientProviders, pA, pB))
	if v, err := qs.Sends.Receipts(ctx, opsA, ofA); err != nil || *v.Scope != pA || v.IssuedBy != domain.AdminActor(root.Admin) {
		t.Errorf("A's admin on a superadmin's send to A: %+v, %v", v, err)
	}
	for _, c := range []struct {
		caller app.Caller
		id     int64
	}{{opsB, ofA}, {opsA, spanning}} {
		if _, err := qs.Sends.Receipts(ctx, c.caller, c.id); !errors.Is(err, app.ErrForbidden) {
			t.Errorf("%s on send %d: %v, want ErrForbidden", c.caller.Admin, c.id, err)
		}
	}
	if _, err := qs.Sends.Receipts(ctx, root, spanning+100); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("unknown send: %v", err)
	}

	// Unknown ids are a 400 even when others are out of scope, and a long
	// list of them is named only in part.
	many := restartTo(domain.RecipientAccounts, b1)
	for i := range 30 {
		many.IDs = append(many.IDs, 900000+int64(i))
	}
	_, err := cmds.Sends.Send(ctx, opsA, many)
	var ve *domain.ValidationError
	if !errors.As(err, &ve) || len(ve.Fields) != domain.MaxReportedIDs || ve.Fields["ids[1]"] != "unknown account 900000" {
		t.Errorf("error %v, want %d fields from ids[1]", err, domain.MaxReportedIDs)
	}
	if _, err := cmds.Sends.Send(ctx, opsA, restartTo(domain.RecipientAccounts, a1, b1)); !errors.Is(err, app.ErrForbidden) {
		t.Errorf("A's admin to B's account: %v, want ErrForbidden", err)
	}
}
