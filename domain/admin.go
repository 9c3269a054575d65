package domain

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Admin is an administrator of the Provider, Admin and Statistics APIs,
// identified by login (its stream is admin-{login}). The zero Admin does
// not exist yet.
type Admin struct {
	Login string
	// PasswordHash is a bcrypt hash computed outside the domain; the domain
	// only stores it.
	PasswordHash string
	// Provider limits the admin to one provider; nil is a superadmin.
	Provider *int64
	Deleted  bool
	// SignedOut are the admin's sessions signed out before they expired,
	// each kept until it would have expired: their tokens are refused
	// meanwhile. Evolve replaces the slice, never changes it in place, so
	// copies of an Admin may share it.
	SignedOut []SignedOutSession `json:",omitempty"`
}

// SignedOutSession is a session signed out before it expired.
type SignedOutSession struct {
	ID string
	// Until is when the session would have expired at the latest.
	Until time.Time
}

// HasSignedOut reports whether session was signed out.
func (a Admin) HasSignedOut(session string) bool {
	for _, s := range a.SignedOut {
		if s.ID == session {
			return true
		}
	}
	return false
}

// Exists reports whether the admin was created and not deleted.
func (a Admin) Exists() bool { return a.Login != "" && !a.Deleted }

// Superadmin reports whether the admin may act on every provider.
func (a Admin) Superadmin() bool { return a.Provider == nil }

// MaxAdminLoginLen is the maximum length of an admin login.
const MaxAdminLoginLen = 64

var errAdminTarget = errors.New("admin command decided on another admin's state")

// ValidateAdminLogin reports whether login is 1 to MaxAdminLoginLen
// characters of [A-Za-z0-9._@-]. The set keeps logins safe in stream names,
// Basic credentials and actor strings.
func ValidateAdminLogin(login string) error {
	switch {
	case login == "":
		return errors.New(problemRequired)
	case len(login) > MaxAdminLoginLen:
		return fmt.Errorf("must be at most %d characters", MaxAdminLoginLen)
	}
	for i := 0; i < len(login); i++ {
		c := login[i]
		if !isAlnum(c) && c != '.' && c != '_' && c != '@' && c != '-' {
			return errors.New("may contain only letters, digits and . _ @ -")
		}
	}
	return nil
}

// checkPasswordHash accepts only bcrypt hashes ($2a$, $2b$ or $2y$, 60
// bytes), so a plain password can never be stored by mistake. The problem
// is reported on the wire field "password".
func checkPasswordHash(h string) string {
	if h == "" {
		return problemRequired
	}
	if len(h) != 60 || !(strings.HasPrefix(h, "$2a$") || strings.HasPrefix(h, "$2b$") || strings.HasPrefix(h, "$2y$")) {
		return "must be stored as a bcrypt hash"
	}
	return ""
}

// MaxSessionIDLen is the maximum length of a session id.
const MaxSessionIDLen = 64

// ValidateSessionID reports whether id is 1 to MaxSessionIDLen characters
// of [A-Za-z0-9_-] (base64url or hex of random bytes).
func ValidateSessionID(id string) error {
	switch {
	case id == "":
		return errors.New(problemRequired)
	case len(id) > MaxSessionIDLen:
		return fmt.Errorf("must be at most %d characters", MaxSessionIDLen)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !isAlnum(c) && c != '_' && c != '-' {
			return errors.New("may contain only letters, digits, _ and -")
		}
	}
	return nil
}

// AdminCommand is a command on an admin: CreateAdmin, ChangeAdminPassword,
// ChangeAdminScope, DeleteAdmin or SignOutAdmin.
type AdminCommand interface {
	Stream() string
	adminCommand()
}

// CreateAdmin creates admin Login. A deleted admin's login may be created
// again: the new admin starts afresh.
type CreateAdmin struct {
	Login        string
	PasswordHash string
	Provider     *int64 // nil: superadmin
}

// ChangeAdminPassword sets a new password hash.
type ChangeAdminPassword struct {
	Login        string
	PasswordHash string
}

// ChangeAdminScope limits the admin to Provider, or makes it a superadmin
// when Provider is nil.
type ChangeAdminScope struct {
	Login    string
	Provider *int64
}

// DeleteAdmin deletes admin Login.
type DeleteAdmin struct{ Login string }

// SignOutAdmin signs session Session of admin Login out, whose tokens
// expire at Until at the latest. A session already signed out, or past
// Until, needs nothing recorded.
type SignOutAdmin struct {
	Login   string
	Session string
	Until   time.Time
}

// Stream implements AdminCommand.
func (c CreateAdmin) Stream() string { return AdminStream(c.Login) }

// Stream implements AdminCommand.
func (c ChangeAdminPassword) Stream() string { return AdminStream(c.Login) }

// Stream implements AdminCommand.
func (c ChangeAdminScope) Stream() string { return AdminStream(c.Login) }

// Stream implements AdminCommand.
func (c DeleteAdmin) Stream() string { return AdminStream(c.Login) }

// Stream implements AdminCommand.
func (c SignOutAdmin) Stream() string { return AdminStream(c.Login) }

func (CreateAdmin) adminCommand()         {}
func (ChangeAdminPassword) adminCommand() {}
func (ChangeAdminScope) adminCommand()    {}
func (DeleteAdmin) adminCommand()         {}
func (SignOutAdmin) adminCommand()        {}

// AdminDecider returns the decider of the admin aggregate.
func AdminDecider() Decider[Admin, AdminCommand] {
	return Decider[Admin, AdminCommand]{
		Initial: func() Admin { return Admin{} },
		Evolve:  evolveAdmin,
		Decide:  decideAdmin,
	}
}

func evolveAdmin(s Admin, e Event) Admin {
	switch e := e.(type) {
	case AdminCreated:
		return Admin{Login: e.Login, PasswordHash: e.PasswordHash, Provider: e.Provider}
	case AdminPasswordChanged:
		s.PasswordHash = e.PasswordHash
	case AdminScopeChanged:
		s.Provider = e.Provider
	case AdminDeleted:
		s.Deleted = true
	case AdminSignedOut:
		// Sessions past their expiry need no keeping: their tokens are
		// refused anyway.
		kept := make([]SignedOutSession, 0, len(s.SignedOut)+1)
		for _, o := range s.SignedOut {
			if o.Until.After(e.At) {
				kept = append(kept, o)
			}
		}
		s.SignedOut = append(kept, SignedOutSession{ID: e.Session, Until: e.Until})
	}
	return s
}

func decideAdmin(s Admin, c AdminCommand, now time.Time) ([]Event, error) {
	switch c := c.(type) {
	case CreateAdmin:
		var p problems
		p.addErr("login", ValidateAdminLogin(c.Login))
		p.add("password", checkPasswordHash(c.PasswordHash))
		if c.Provider != nil {
			p.add("provider", checkID(*c.Provider))
		}
		if err := p.err(); err != nil {
			return nil, err
		}
		if s.Exists() {
			return nil, alreadyExists("admin", c.Login)
		}
		return []Event{AdminCreated{Login: c.Login, PasswordHash: c.PasswordHash, Provider: c.Provider}}, nil
	case ChangeAdminPassword:
		if err := checkAdminTarget(s, c.Login); err != nil {
			return nil, err
		}
		if problem := checkPasswordHash(c.PasswordHash); problem != "" {
			return nil, NewValidationError("password", problem)
		}
		if c.PasswordHash == s.PasswordHash {
			return nil, nil
		}
		return []Event{AdminPasswordChanged{Login: s.Login, PasswordHash: c.PasswordHash}}, nil
	case ChangeAdminScope:
		if err := checkAdminTarget(s, c.Login); err != nil {
			return nil, err
		}
		if c.Provider != nil && *c.Provider <= 0 {
			return nil, NewValidationError("provider", problemPositive)
		}
		if equalPtr(c.Provider, s.Provider) {
			return nil, nil
		}
		return []Event{AdminScopeChanged{Login: s.Login, Provider: c.Provider}}, nil
	case DeleteAdmin:
		if err := checkAdminTarget(s, c.Login); err != nil {
			return nil, err
		}
		return []Event{AdminDeleted{Login: s.Login}}, nil
	case SignOutAdmin:
		if err := checkAdminTarget(s, c.Login); err != nil {
			return nil, err
		}
		if err := ValidateSessionID(c.Session); err != nil {
			return nil, NewValidationError("session", err.Error())
		}
		if !c.Until.After(now) || s.HasSignedOut(c.Session) {
			return nil, nil
		}
		return []Event{AdminSignedOut{Login: s.Login, Session: c.Session, Until: c.Until.UTC(), At: now.UTC()}}, nil
	}
	return nil, errors.New("domain: unknown admin command")
}

// checkAdminTarget returns ErrNotFound unless admin login exists in s.
func checkAdminTarget(s Admin, login string) error {
	switch {
	case !s.Exists():
		return notFound("admin", login)
	case s.Login != login:
		return errAdminTarget
	}
	return nil
}
