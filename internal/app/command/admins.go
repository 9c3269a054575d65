package command

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/record"
	"tvsm/internal/app"
	"tvsm/projections/readmodel"
)

// Limits of admin passwords. bcrypt reads at most 72 bytes of a password
// and the Basic authenticator refuses longer ones, so they are refused here
// rather than silently cut.
const (
	MinAdminPasswordLen   = 8  // characters
	MaxAdminPasswordBytes = 72 // bytes
)

// DefaultBootstrapLogin is the login Bootstrap uses when given none.
const DefaultBootstrapLogin = "admin"

// AdminFields are the fields of an administrator create or update. Password
// is the plain password: the service hashes it with bcrypt and never
// stores or returns it. Provider null (or absent on create) makes a
// superadmin.
type AdminFields struct {
	Login    domain.Optional[string]
	Password domain.Optional[string]
	Provider domain.Optional[int64]
}

// Admins handles the commands on administrators.
type Admins struct{ w *writer }

// Create creates an administrator (superadmins only) with a bcrypt hash of
// its password, limited to f.Provider (which must exist) or a superadmin
// when there is none.
func (h *Admins) Create(ctx context.Context, c app.Caller, f AdminFields) (domain.Admin, error) {
	w := h.w
	if err := c.RequireSuperadmin(); err != nil {
		return domain.Admin{}, err
	}
	login := f.Login.Or("")
	var problems map[string]string
	if err := domain.ValidateAdminLogin(login); err != nil {
		addFieldProblem(&problems, "login", err.Error())
	}
	password, ok := f.Password.Get()
	if !ok {
		addFieldProblem(&problems, "password", "required")
	} else if p := adminPasswordProblem(password); p != "" {
		addFieldProblem(&problems, "password", p)
	}
	w.checkProvider(&problems, f.Provider)
	if len(problems) > 0 {
		return domain.Admin{}, &domain.ValidationError{Fields: problems}
	}
	hash, err := w.hashPassword(password)
	if err != nil {
		return domain.Admin{}, err
	}
	cmd := domain.CreateAdmin{Login: login, PasswordHash: hash, Provider: f.Provider.Ptr()}
	res, err := app.Execute(ctx, w.x, cmd.Stream(), domain.AdminDecider(), domain.AdminCommand(cmd), c.Meta())
	pos := res.Position
	if errors.Is(err, domain.ErrAlreadyExists) && c.IdempotencyKey != "" {
		// A retry of a create interrupted after its append: the hash
		// (salted afresh) differs, so the event was not recognised, but
		// the admin there is this request's.
		if p, same, lerr := h.same(ctx, login, password, cmd.Provider); lerr == nil && same {
			pos, err = p, nil
		}
	}
	if err != nil {
		return domain.Admin{}, err
	}
	if err := w.written(ctx, pos); err != nil {
		return domain.Admin{}, err
	}
	return w.q.Admins.Current(login)
}

// Fingerprint is what stands for a create's fields when its Idempotency-Key
// is checked: the password is left out, since its hash would end up in the
// log, open to guessing. A retry with the same key and another password
// gets the first answer.
func (f AdminFields) Fingerprint() AdminFields {
	return AdminFields{Login: f.Login, Provider: f.Provider}
}

// same reports whether admin login exists with the given password and
// provider, reading its stream (the read model may lag), and the position
// of its last event.
func (h *Admins) same(ctx context.Context, login, password string, provider *int64) (eventstore.Position, bool, error) {
	d := domain.AdminDecider()
	cur, head, err := record.Fold(ctx, h.w.rec, domain.AdminStream(login), record.Head{}, d.Initial(),
		func(st domain.Admin, e domain.Event, _ eventstore.RecordedEvent) (domain.Admin, error) {
			return d.Evolve(st, e), nil
		})
	if err != nil {
		return head.Position, false, err
	}
	pos := head.Position
	same := cur.Exists() && equalScope(cur.Provider, provider) &&
		bcrypt.CompareHashAndPassword([]byte(cur.PasswordHash), []byte(password)) == nil
	return pos, same, nil
}

// Update changes the password and provider scope of admin login that f
// carries. Superadmins may change any admin; any admin may change its own
// password. A password equal to the current one, or an unchanged provider,
// appends nothing. The last superadmin cannot be limited to a provider.
func (h *Admins) Update(ctx context.Context, c app.Caller, login string, f AdminFields) (domain.Admin, error) {
	w := h.w
	self := c.Admin == login
	if err := c.RequireSuperadmin(); err != nil && !self {
		return domain.Admin{}, err
	}
	if v, ok := f.Login.Get(); ok && v != login {
		return domain.Admin{}, domain.NewValidationError("login", "cannot be changed")
	}
	cur, ok := w.model.Admin(login)
	if !ok {
		return domain.Admin{}, notFound("admin", login)
	}
	changeScope := f.Provider.Present && !equalScope(f.Provider.Ptr(), cur.Provider)
	if changeScope {
		if err := c.RequireSuperadmin(); err != nil {
			return domain.Admin{}, err // a scoped admin may not widen or move its own scope
		}
	}
	var problems map[string]string
	password, setPassword := f.Password.Get()
	if setPassword {
		if p := adminPasswordProblem(password); p != "" {
			addFieldProblem(&problems, "password", p)
		} else if bcrypt.CompareHashAndPassword([]byte(cur.PasswordHash), []byte(password)) == nil {
			setPassword = false // the same password: nothing to change
		}
	}
	if changeScope {
		w.checkProvider(&problems, f.Provider)
		if cur.Provider == nil && w.lastSuperadmin(login) {
			addFieldProblem(&problems, "provider", "the last superadmin cannot be limited to a provider")
		}
	}
	if len(problems) > 0 {
		return domain.Admin{}, &domain.ValidationError{Fields: problems}
	}

	var pos eventstore.Position
	if setPassword {
		hash, err := w.hashPassword(password)
		if err != nil {
			return domain.Admin{}, err
		}
		cmd := domain.ChangeAdminPassword{Login: login, PasswordHash: hash}
		res, err := app.Execute(ctx, w.x, cmd.Stream(), domain.AdminDecider(), domain.AdminCommand(cmd), c.Meta())
		if err != nil {
			return domain.Admin{}, err
		}
		pos = laterPosition(pos, res.Position)
	}
	if changeScope {
		cmd := domain.ChangeAdminScope{Login: login, Provider: f.Provider.Ptr()}
		res, err := app.Execute(ctx, w.x, cmd.Stream(), domain.AdminDecider(), domain.AdminCommand(cmd), c.Meta())
		if err != nil {
			return domain.Admin{}, err
		}
		pos = laterPosition(pos, res.Position)
	}
	if err := w.written(ctx, pos); err != nil {
		return domain.Admin{}, err
	}
	return w.q.Admins.Current(login)
}

// Delete deletes admin login (superadmins only) and returns it as it was.
// The last superadmin cannot be deleted.
func (h *Admins) Delete(ctx context.Context, c app.Caller, login string) (domain.Admin, error) {
	w := h.w
	if err := c.RequireSuperadmin(); err != nil {
		return domain.Admin{}, err
	}
	if domain.ValidateAdminLogin(login) != nil { // no such admin, nor stream
		return domain.Admin{}, notFound("admin", login)
	}
	if cur, ok := w.model.Admin(login); ok && cur.Provider == nil && w.lastSuperadmin(login) {
		return domain.Admin{}, domain.NewValidationError("login", "the last superadmin cannot be deleted")
	}
	cmd := domain.DeleteAdmin{Login: login}
	res, err := execute(ctx, w, c, cmd.Stream(), domain.AdminDecider(), domain.AdminCommand(cmd))
	if err != nil {
		return domain.Admin{}, err
	}
	return res.State, nil
}

// SignOut signs the caller's session out: its tokens are refused from the
// moment the read model shows it (on return here, on other nodes once
// theirs has applied it) until until, when they would have expired anyway.
// Signing a session out twice, or after until, appends nothing.
func (h *Admins) SignOut(ctx context.Context, c app.Caller, session string, until time.Time) error {
	if c.Admin == "" {
		return errors.New("command: sign out: no admin signed in")
	}
	cmd := domain.SignOutAdmin{Login: c.Admin, Session: session, Until: until}
	_, err := execute(ctx, h.w, c, cmd.Stream(), domain.AdminDecider(), domain.AdminCommand(cmd))
	return err
}

// Bootstrap creates the first superadmin when there is no administrator at
// all, so that a fresh installation can be reached: login (default
// DefaultBootstrapLogin) with password, or with a generated password
// (26 random base32 characters, 130 bits) when password is empty, which it
// returns so that `serve` can print it once. When any admin exists it does
// nothing and returns "". It reads the read model, so call it once the
// model has caught up with the log (node.Start does). Two nodes
// bootstrapping the same login at once create it once; the loser returns "".
func (h *Admins) Bootstrap(ctx context.Context, login, password string) (generated string, err error) {
	w := h.w
	all, err := w.model.ListAdmins(readmodel.AdminQuery{Scope: readmodel.AllProviders, Page: readmodel.Page{Limit: 1}})
	if err != nil {
		return "", fmt.Errorf("command: bootstrap: %w", err)
	}
	if all.Total > 0 {
		return "", nil
	}
	if login == "" {
		login = DefaultBootstrapLogin
	}
	if err := domain.ValidateAdminLogin(login); err != nil {
		return "", fmt.Errorf("command: bootstrap: admin login %q: %w", login, err)
	}
	if password == "" {
		password = rand.Text()
		generated = password
	}
	if p := adminPasswordProblem(password); p != "" {
		return "", fmt.Errorf("command: bootstrap: admin password %s", p)
	}
	hash, err := w.hashPassword(password)
	if err != nil {
		return "", fmt.Errorf("command: bootstrap: %w", err)
	}
	cmd := domain.CreateAdmin{Login: login, PasswordHash: hash}
	meta := app.RequestMeta{Actor: domain.SystemActor(), RequestID: "bootstrap"}
	res, err := app.Execute(ctx, w.x, cmd.Stream(), domain.AdminDecider(), domain.AdminCommand(cmd), meta)
	if errors.Is(err, domain.ErrAlreadyExists) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("command: bootstrap: %w", err)
	}
	if err := w.written(ctx, res.Position); err != nil {
		return "", fmt.Errorf("command: bootstrap: %w", err)
	}
	w.log.Info("created the first superadmin", "login", login, "generated_password", generated != "")
	return generated, nil
}

// checkProvider records a problem when the provider an admin is to be
// limited to does not exist (null and absent mean superadmin).
func (w *writer) checkProvider(problems *map[string]string, provider domain.Optional[int64]) {
	v, ok := provider.Get()
	switch {
	case !ok:
	case v <= 0:
		addFieldProblem(problems, "provider", "must be a positive integer")
	default:
		if _, exists := w.model.Provider(v); !exists {
			addFieldProblem(problems, "provider", fmt.Sprintf("unknown provider %d", v))
		}
	}
}

// lastSuperadmin reports whether login is the only superadmin left.
func (w *writer) lastSuperadmin(login string) bool {
	all, err := w.model.ListAdmins(readmodel.AdminQuery{Scope: readmodel.AllProviders})
	if err != nil {
		return true // refuse rather than risk locking everyone out
	}
	for a := range all.Items {
		if a.Provider == nil && a.Login != login {
			return false
		}
	}
	return true
}

func (w *writer) hashPassword(password string) (string, error) {
	hash, err := bcrypt.GenerateFromPassword([]byte(password), w.cfg.BcryptCost)
	if err != nil {
		return "", fmt.Errorf("command: hash admin password: %w", err)
	}
	return string(hash), nil
}

// adminPasswordProblem says what is wrong with a new admin password, or "".
func adminPasswordProblem(p string) string {
	switch {
	case !utf8.ValidString(p):
		return "must be valid UTF-8"
	case utf8.RuneCountInString(p) < MinAdminPasswordLen:
		return fmt.Sprintf("must be at least %d characters", MinAdminPasswordLen)
	case len(p) > MaxAdminPasswordBytes:
		return fmt.Sprintf("must be at most %d bytes", MaxAdminPasswordBytes)
	}
	return ""
}

// equalScope reports whether two provider scopes (nil: superadmin) are the
// same.
func equalScope(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
