package domain_test

import (
	"strings"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/domain/domaintest"
)

type adminCase = domaintest.Case[domain.Admin, domain.AdminCommand]

var (
	hash1 = "$2a$10$" + strings.Repeat("a", 53)
	hash2 = "$2b$12$" + strings.Repeat("b", 53)
)

func TestAdminCommands(t *testing.T) {
	super := domain.AdminCreated{Login: "root", PasswordHash: hash1}
	deleted := domain.AdminDeleted{Login: "root"}
	spec := domaintest.For(domain.AdminDecider()).Codec(eventRegistry())
	spec.Run(t,
		adminCase{Name: "create superadmin", When: domain.CreateAdmin{Login: "root", PasswordHash: hash1}, Then: []domain.Event{super}},
		adminCase{Name: "create scoped", When: domain.CreateAdmin{Login: "ops@acme.tv", PasswordHash: hash1, Provider: ptr[int64](7)},
			Then: []domain.Event{domain.AdminCreated{Login: "ops@acme.tv", PasswordHash: hash1, Provider: ptr[int64](7)}}},
		adminCase{Name: "create twice", Given: []domain.Event{super}, When: domain.CreateAdmin{Login: "root", PasswordHash: hash1}, Err: domain.ErrAlreadyExists},
		adminCase{Name: "re-create a deleted login", Given: []domain.Event{super, deleted},
			When: domain.CreateAdmin{Login: "root", PasswordHash: hash2, Provider: ptr[int64](7)},
			Then: []domain.Event{domain.AdminCreated{Login: "root", PasswordHash: hash2, Provider: ptr[int64](7)}}},
		adminCase{Name: "change password", Given: []domain.Event{super}, When: domain.ChangeAdminPassword{Login: "root", PasswordHash: hash2},
			Then: []domain.Event{domain.AdminPasswordChanged{Login: "root", PasswordHash: hash2}}},
		adminCase{Name: "same hash", Given: []domain.Event{super}, When: domain.ChangeAdminPassword{Login: "root", PasswordHash: hash1}},
		adminCase{Name: "plain password refused", Given: []domain.Event{super}, When: domain.ChangeAdminPassword{Login: "root", PasswordHash: "secret"}, Err: domain.ErrValidation},
		adminCase{Name: "scope to provider", Given: []domain.Event{super}, When: domain.ChangeAdminScope{Login: "root", Provider: ptr[int64](7)},
			Then: []domain.Event{domain.AdminScopeChanged{Login: "root", Provider: ptr[int64](7)}}},
		adminCase{Name: "back to superadmin", Given: []domain.Event{super, domain.AdminScopeChanged{Login: "root", Provider: ptr[int64](7)}},
			When: domain.ChangeAdminScope{Login: "root"}, Then: []domain.Event{domain.AdminScopeChanged{Login: "root"}}},
		adminCase{Name: "same scope", Given: []domain.Event{super}, When: domain.ChangeAdminScope{Login: "root"}},
		adminCase{Name: "bad scope", Given: []domain.Event{super}, When: domain.ChangeAdminScope{Login: "root", Provider: ptr[int64](0)}, Err: domain.ErrValidation},
		adminCase{Name: "delete", Given: []domain.Event{super}, When: domain.DeleteAdmin{Login: "root"}, Then: []domain.Event{deleted}},
		adminCase{Name: "password of deleted", Given: []domain.Event{super, deleted}, When: domain.ChangeAdminPassword{Login: "root", PasswordHash: hash2}, Err: domain.ErrNotFound},
		adminCase{Name: "scope of unknown", When: domain.ChangeAdminScope{Login: "root"}, Err: domain.ErrNotFound},
		adminCase{Name: "delete deleted", Given: []domain.Event{super, deleted}, When: domain.DeleteAdmin{Login: "root"}, Err: domain.ErrNotFound},
	)
	spec.Given(super, domain.AdminScopeChanged{Login: "root", Provider: ptr[int64](7)}, domain.AdminPasswordChanged{Login: "root", PasswordHash: hash2}).
		ThenState(t, domain.Admin{Login: "root", PasswordHash: hash2, Provider: ptr[int64](7)})
	if a := domain.AdminDecider().Replay(super); !a.Superadmin() || !a.Exists() {
		t.Errorf("%+v: want an existing superadmin", a)
	}
}

// TestAdminSignOut: a session signed out is kept until it would have
// expired; signing it out again, or after that, records nothing; sessions
// past their expiry are dropped as others are signed out.
func TestAdminSignOut(t *testing.T) {
	super := domain.AdminCreated{Login: "root", PasswordHash: hash1}
	now := domaintest.Now()
	later := now.Add(2 * time.Hour)
	first := domain.AdminSignedOut{Login: "root", Session: "s-1", Until: now.Add(time.Hour), At: now}
	spec := domaintest.For(domain.AdminDecider()).Codec(eventRegistry())
	spec.Run(t,
		adminCase{Name: "sign out", Given: []domain.Event{super}, When: domain.SignOutAdmin{Login: "root", Session: "s-1", Until: now.Add(time.Hour)},
			Then: []domain.Event{first}},
		adminCase{Name: "twice", Given: []domain.Event{super, first}, When: domain.SignOutAdmin{Login: "root", Session: "s-1", Until: now.Add(time.Hour)}},
		adminCase{Name: "expired already", Given: []domain.Event{super}, When: domain.SignOutAdmin{Login: "root", Session: "s-2", Until: now}},
		adminCase{Name: "bad session id", Given: []domain.Event{super}, When: domain.SignOutAdmin{Login: "root", Session: "a/b", Until: later}, Err: domain.ErrValidation},
		adminCase{Name: "no session id", Given: []domain.Event{super}, When: domain.SignOutAdmin{Login: "root", Until: later}, Err: domain.ErrValidation},
		adminCase{Name: "unknown admin", When: domain.SignOutAdmin{Login: "root", Session: "s-1", Until: later}, Err: domain.ErrNotFound},
	)
	second := domain.AdminSignedOut{Login: "root", Session: "s-2", Until: later.Add(time.Hour), At: later}
	a := domain.AdminDecider().Replay(super, first, second)
	if a.HasSignedOut("s-1") || !a.HasSignedOut("s-2") || len(a.SignedOut) != 1 {
		t.Errorf("after s-1 expired and s-2 was signed out: %+v; want only s-2 kept", a.SignedOut)
	}
	if b := domain.AdminDecider().Replay(super, first); !b.HasSignedOut("s-1") || b.HasSignedOut("s-2") {
		t.Errorf("after s-1 was signed out: %+v", b.SignedOut)
	}
}

func TestAdminValidation(t *testing.T) {
	d := domain.AdminDecider()
	wantFields(t, decideErr(t, d, domain.AdminCommand(domain.CreateAdmin{})), "login", "password")
	wantFields(t, decideErr(t, d, domain.AdminCommand(domain.CreateAdmin{Login: "a b", PasswordHash: hash1, Provider: ptr[int64](-1)})), "login", "provider")
	wantFields(t, decideErr(t, d, domain.AdminCommand(domain.CreateAdmin{Login: "root", PasswordHash: "$2a$10$short"})), "password")
}

func TestValidateAdminLogin(t *testing.T) {
	for _, ok := range []string{"a", "root", "ops.team_1@acme-tv.example", strings.Repeat("x", 64)} {
		if err := domain.ValidateAdminLogin(ok); err != nil {
			t.Errorf("ValidateAdminLogin(%q) = %v", ok, err)
		}
		if err := domain.AdminActor(ok).Validate(); err != nil {
			t.Errorf("a valid admin login %q is not a valid actor: %v", ok, err)
		}
	}
	for _, bad := range []string{"", strings.Repeat("x", 65), "a b", "a:b", "a/b", "Зоя", "a\n"} {
		if err := domain.ValidateAdminLogin(bad); err == nil {
			t.Errorf("ValidateAdminLogin(%q) succeeded", bad)
		}
	}
	if got := domain.AdminStream("root"); got != "admin-root" {
		t.Errorf("AdminStream = %q", got)
	}
}
