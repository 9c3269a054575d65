package domain_test

import (
	"time"

	"tvsm/domain"
)

// Event types used by the registry tests.

const (
	accountCreatedType  = "AccountCreated.v1"
	accountRenamedType  = "AccountRenamed.v1"
	accountDisabledType = "AccountDisabled.v1"
)

type accountCreated struct {
	AccountID int64     `json:"account_id"`
	Login     string    `json:"login"`
	Enabled   bool      `json:"enabled"`
	At        time.Time `json:"at"`
}

func (accountCreated) EventType() string { return accountCreatedType }

type accountRenamed struct {
	AccountID int64  `json:"account_id"`
	Name      string `json:"name"`
}

func (accountRenamed) EventType() string { return accountRenamedType }

// accountDisabled has no fields.
type accountDisabled struct{}

func (accountDisabled) EventType() string { return accountDisabledType }

// impostor claims accountCreatedType but is another Go type.
type impostor struct{ X int }

func (impostor) EventType() string { return accountCreatedType }

// ptrEvent implements Event only through its pointer.
type ptrEvent struct{}

func (*ptrEvent) EventType() string { return "PtrEvent.v1" }

// intEvent is not a struct.
type intEvent int

func (intEvent) EventType() string { return "IntEvent.v1" }

// floatEvent cannot encode NaN.
type floatEvent struct{ F float64 }

func (floatEvent) EventType() string { return "FloatEvent.v1" }

func newTestRegistry() *domain.Registry {
	r := domain.NewRegistry()
	r.Register(accountCreatedType, func() domain.Event { return new(accountCreated) })
	r.Register(accountRenamedType, func() domain.Event { return accountRenamed{} })
	r.Register(accountDisabledType, func() domain.Event { return new(accountDisabled) })
	return r
}
