package domain

// Admin event type names.
const (
	AdminCreatedType         = "AdminCreated.v1"
	AdminPasswordChangedType = "AdminPasswordChanged.v1"
	AdminScopeChangedType    = "AdminScopeChanged.v1"
	AdminDeletedType         = "AdminDeleted.v1"
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

// EventType implements Event.
func (AdminCreated) EventType() string { return AdminCreatedType }

// EventType implements Event.
func (AdminPasswordChanged) EventType() string { return AdminPasswordChangedType }

// EventType implements Event.
func (AdminScopeChanged) EventType() string { return AdminScopeChangedType }

// EventType implements Event.
func (AdminDeleted) EventType() string { return AdminDeletedType }

func registerAdminEvents(r *Registry) {
	r.Register(AdminCreatedType, func() Event { return new(AdminCreated) })
	r.Register(AdminPasswordChangedType, func() Event { return new(AdminPasswordChanged) })
	r.Register(AdminScopeChangedType, func() Event { return new(AdminScopeChanged) })
	r.Register(AdminDeletedType, func() Event { return new(AdminDeleted) })
}
