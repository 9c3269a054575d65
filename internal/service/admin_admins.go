package service

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
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

// ListAdmins lists the administrators q selects. A provider-scoped admin
// sees the admins of its own provider only (never superadmins). The
// results carry password hashes: never show them.
func (s *Service) ListAdmins(_ context.Context, c Caller, q readmodel.AdminQuery) (readmodel.List[domain.Admin], error) {
	q.Scope = adminListScope(c)
	l, err := s.cfg.Model.ListAdmins(q)
	return l, listError(err)
}

// Admin returns the administrator login. A provider-scoped admin may read
// itself and the admins of its own provider; others are ErrForbidden.
func (s *Service) Admin(_ context.Context, c Caller, login string) (domain.Admin, error) {
	a, ok := s.cfg.Model.Admin(login)
	if !ok {
		return domain.Admin{}, adminNotFound("admin", login)
	}
	if err := adminReadable(c, a); err != nil {
		return domain.Admin{}, err
	}
	return a, nil
}

// adminReadable reports whether caller c may see admin a.
func adminReadable(c Caller, a domain.Admin) error {
	switch {
	case c.Scope == nil, a.Login == c.Admin:
		return nil
	case a.Provider == nil:
		return fmt.Errorf("superadmin %q: %w", a.Login, ErrForbidden)
	}
	return c.checkScope(*a.Provider)
}

// CreateAdmin creates an administrator (superadmins only) with a bcrypt
// hash of its password, limited to f.Provider (which must exist) or a
// superadmin when there is none, and answers with encode's rendering of it
// (see CreateProvider for Idempotency-Key).
func (s *Service) CreateAdmin(ctx context.Context, c Caller, f AdminFields, encode BodyEncoder[domain.Admin]) ([]byte, error) {
	if err := c.superadmin(); err != nil {
		return nil, err
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
	s.checkAdminProvider(&problems, f.Provider)
	if len(problems) > 0 {
		return nil, &domain.ValidationError{Fields: problems}
	}
	hash, err := s.hashPassword(password)
	if err != nil {
		return nil, err
	}
	cmd := domain.CreateAdmin{Login: login, PasswordHash: hash, Provider: f.Provider.Ptr()}
	// The fingerprint leaves the password out: its hash would end up in the
	// log, open to guessing. A retry with the same key and another password
	// gets the first answer.
	fp := fingerprintOf("admin", AdminFields{Login: f.Login, Provider: f.Provider})
	read := func() (domain.Admin, error) { return s.adminAfterWrite(login) }
	return createOnce(ctx, s, c, "admin", fp, encode,
		func(ctx context.Context, _ *app.Pins) (eventstore.Position, func() (domain.Admin, error), error) {
			res, err := app.Execute(ctx, s.cfg.Executor, cmd.Stream(), domain.AdminDecider(), domain.AdminCommand(cmd), c.meta())
			if errors.Is(err, domain.ErrAlreadyExists) && c.IdempotencyKey != "" {
				// A retry of a create interrupted after its append: the
				// hash (salted afresh) differs, so the event was not
				// recognised, but the admin there is this request's.
				if pos, same, lerr := s.sameAdmin(ctx, login, password, cmd.Provider); lerr == nil && same {
					return pos, read, nil
				}
			}
			if err != nil {
				return eventstore.Position{}, nil, err
			}
			return res.Position, read, nil
		})
}

// sameAdmin reports whether admin login exists with the given password and
// provider, reading its stream (the read model may lag), and the position
// of its last event.
func (s *Service) sameAdmin(ctx context.Context, login, password string, provider *int64) (eventstore.Position, bool, error) {
	d := domain.AdminDecider()
	cur, head, err := record.Fold(ctx, s.rec, domain.AdminStream(login), record.Head{}, d.Initial(),
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

// UpdateAdmin changes the password and provider scope of admin login that
// f carries. Superadmins may change any admin; any admin may change its own
// password. A password equal to the current one, or an unchanged provider,
// appends nothing. The last superadmin cannot be limited to a provider.
func (s *Service) UpdateAdmin(ctx context.Context, c Caller, login string, f AdminFields) (domain.Admin, error) {
	self := c.Admin == login
	if err := c.superadmin(); err != nil && !self {
		return domain.Admin{}, err
	}
	if v, ok := f.Login.Get(); ok && v != login {
		return domain.Admin{}, domain.NewValidationError("login", "cannot be changed")
	}
	cur, ok := s.cfg.Model.Admin(login)
	if !ok {
		return domain.Admin{}, adminNotFound("admin", login)
	}
	changeScope := f.Provider.Present && !equalScope(f.Provider.Ptr(), cur.Provider)
	if changeScope {
		if err := c.superadmin(); err != nil {
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
		s.checkAdminProvider(&problems, f.Provider)
		if cur.Provider == nil && s.lastSuperadmin(login) {
			addFieldProblem(&problems, "provider", "the last superadmin cannot be limited to a provider")
		}
	}
	if len(problems) > 0 {
		return domain.Admin{}, &domain.ValidationError{Fields: problems}
	}

	var pos eventstore.Position
	if setPassword {
		hash, err := s.hashPassword(password)
		if err != nil {
			return domain.Admin{}, err
		}
		cmd := domain.ChangeAdminPassword{Login: login, PasswordHash: hash}
		res, err := app.Execute(ctx, s.cfg.Executor, cmd.Stream(), domain.AdminDecider(), domain.AdminCommand(cmd), c.meta())
		if err != nil {
			return domain.Admin{}, err
		}
		pos = laterPosition(pos, res.Position)
	}
	if changeScope {
		cmd := domain.ChangeAdminScope{Login: login, Provider: f.Provider.Ptr()}
		res, err := app.Execute(ctx, s.cfg.Executor, cmd.Stream(), domain.AdminDecider(), domain.AdminCommand(cmd), c.meta())
		if err != nil {
			return domain.Admin{}, err
		}
		pos = laterPosition(pos, res.Position)
	}
	if err := s.written(ctx, pos); err != nil {
		return domain.Admin{}, err
	}
	return s.adminAfterWrite(login)
}

// DeleteAdmin deletes admin login (superadmins only) and returns it as it
// was. The last superadmin cannot be deleted.
func (s *Service) DeleteAdmin(ctx context.Context, c Caller, login string) (domain.Admin, error) {
	if err := c.superadmin(); err != nil {
		return domain.Admin{}, err
	}
	if domain.ValidateAdminLogin(login) != nil { // no such admin, nor stream
		return domain.Admin{}, adminNotFound("admin", login)
	}
	if cur, ok := s.cfg.Model.Admin(login); ok && cur.Provider == nil && s.lastSuperadmin(login) {
		return domain.Admin{}, domain.NewValidationError("login", "the last superadmin cannot be deleted")
	}
	cmd := domain.DeleteAdmin{Login: login}
	res, err := app.Execute(ctx, s.cfg.Executor, cmd.Stream(), domain.AdminDecider(), domain.AdminCommand(cmd), c.meta())
	if err != nil {
		return domain.Admin{}, err
	}
	if err := s.written(ctx, res.Position); err != nil {
		return domain.Admin{}, err
	}
	return res.State, nil
}

// Bootstrap creates the first superadmin when there is no administrator at
// all, so that a fresh installation can be reached: login (default
// DefaultBootstrapLogin) with password, or with a generated password
// (26 random base32 characters, 130 bits) when password is empty, which it
// returns so that `serve` can print it once. When any admin exists it does
// nothing and returns "". It reads the read model, so call it once the
// model has caught up with the log (node.Start does). Two nodes
// bootstrapping the same login at once create it once; the loser returns "".
func (s *Service) Bootstrap(ctx context.Context, login, password string) (generated string, err error) {
	all, err := s.cfg.Model.ListAdmins(readmodel.AdminQuery{Scope: readmodel.AllProviders, Page: readmodel.Page{Limit: 1}})
	if err != nil {
		return "", fmt.Errorf("service: bootstrap: %w", err)
	}
	if all.Total > 0 {
		return "", nil
	}
	if login == "" {
		login = DefaultBootstrapLogin
	}
	if err := domain.ValidateAdminLogin(login); err != nil {
		return "", fmt.Errorf("service: bootstrap: admin login %q: %w", login, err)
	}
	if password == "" {
		password = rand.Text()
		generated = password
	}
	if p := adminPasswordProblem(password); p != "" {
		return "", fmt.Errorf("service: bootstrap: admin password %s", p)
	}
	hash, err := s.hashPassword(password)
	if err != nil {
		return "", fmt.Errorf("service: bootstrap: %w", err)
	}
	cmd := domain.CreateAdmin{Login: login, PasswordHash: hash}
	meta := app.RequestMeta{Actor: domain.SystemActor(), RequestID: "bootstrap"}
	res, err := app.Execute(ctx, s.cfg.Executor, cmd.Stream(), domain.AdminDecider(), domain.AdminCommand(cmd), meta)
	if errors.Is(err, domain.ErrAlreadyExists) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("service: bootstrap: %w", err)
	}
	if err := s.written(ctx, res.Position); err != nil {
		return "", fmt.Errorf("service: bootstrap: %w", err)
	}
	s.log.Info("created the first superadmin", "login", login, "generated_password", generated != "")
	return generated, nil
}

// checkAdminProvider records a problem when the provider an admin is to be
// limited to does not exist (null and absent mean superadmin).
func (s *Service) checkAdminProvider(problems *map[string]string, provider domain.Optional[int64]) {
	v, ok := provider.Get()
	switch {
	case !ok:
	case v <= 0:
		addFieldProblem(problems, "provider", "must be a positive integer")
	default:
		if _, exists := s.cfg.Model.Provider(v); !exists {
			addFieldProblem(problems, "provider", fmt.Sprintf("unknown provider %d", v))
		}
	}
}

// lastSuperadmin reports whether login is the only superadmin left.
func (s *Service) lastSuperadmin(login string) bool {
	all, err := s.cfg.Model.ListAdmins(readmodel.AdminQuery{Scope: readmodel.AllProviders})
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

func (s *Service) hashPassword(password string) (string, error) {
	hash, err := bcrypt.GenerateFromPassword([]byte(password), s.cfg.BcryptCost)
	if err != nil {
		return "", fmt.Errorf("service: hash admin password: %w", err)
	}
	return string(hash), nil
}

func (s *Service) adminAfterWrite(login string) (domain.Admin, error) {
	a, ok := s.cfg.Model.Admin(login)
	if !ok {
		return domain.Admin{}, adminNotFound("admin", login)
	}
	return a, nil
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
