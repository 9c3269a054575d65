package domain

import "time"

// Admin event type names.
const (
	AdminCreatedType         = "AdminCreated.v1"
	AdminPasswordChangedType = "AdminPasswordChanged.v1"
	AdminScopeChangedType    = "AdminScopeChanged.v1"
	AdminDeletedType         = "AdminDeleted.v1"
	AdminSignedOutType       = "AdminSignedOut.v1"
)

// AdminCreated records a new administrator. PasswordHash is a bcrypt hash,
// never the password; Provider is nil for a superadmin.
type AdminCreated struct {
	Login        string `json:"login"`
	PasswordHash string `json:"password_hash"`
	Provider     *int64 `json:"provider,omitempty"`
}

// AdminPasswordChanged records a new password hash.
type AdminPasswordChanged struct {
	Login        string `json:"login"`
	PasswordHash string `json:"password_hash"`
}

// AdminScopeChanged records the provider an admin is limited to; nil makes
// the admin a superadmin.
type AdminScopeChanged struct {
	Login    string `json:"login"`
	Provider *int64 `json:"provider,omitempty"`
}

// AdminDeleted records that an admin was deleted.
type AdminDeleted struct {
	Login string `json:"login"`
}

// AdminSignedOut records that a session of the admin was signed out before
// it expired: its tokens are refused until Until, when they would have
// expired anyway. Session is the session's random id, no secret: tokens are
// signed, and an id alone signs nothing in. At is when it was signed out.
type AdminSignedOut struct {
	Login   string    `json:"login"`
	Session string    `json:"session"`
	Until   time.Time `json:"until"`
	At      time.Time `json:"at"`
}

// EventType implements Event.
func (AdminCreated) EventType() string { return AdminCreatedType }

// EventType implements Event.
func (AdminPasswordChanged) EventType() string { return AdminPasswordChangedType }

// EventType implements Event.
func (AdminScopeChanged) EventType() string { return AdminScopeChangedType }

// EventType implements Event.
func (AdminDeleted) EventType() string { return AdminDeletedType }

// EventType implements Event.
func (AdminSignedOut) EventType() string { return AdminSignedOutType }

func registerAdminEvents(r *Registry) {
	r.Register(AdminCreatedType, func() Event { return new(AdminCreated) })
	r.Register(AdminPasswordChangedType, func() Event { return new(AdminPasswordChanged) })
	r.Register(AdminScopeChangedType, func() Event { return new(AdminScopeChanged) })
	r.Register(AdminDeletedType, func() Event { return new(AdminDeleted) })
	r.Register(AdminSignedOutType, func() Event { return new(AdminSignedOut) })
}
