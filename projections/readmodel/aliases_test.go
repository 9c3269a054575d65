package readmodel

import (
	"io"
	"reflect"

	"tvsm/domain"
	"tvsm/eventstore"
)

// Shorthands of the tests.
var (
	Beginning = eventstore.Beginning
	Start     = eventstore.Start
)

// equalAccounts compares account states, treating nil and empty slices
// alike.
func equalAccounts(a, b domain.Account) bool {
	if len(a.Subscriptions) == 0 && len(b.Subscriptions) == 0 {
		a.Subscriptions, b.Subscriptions = nil, nil
	}
	if len(a.Devices) == 0 && len(b.Devices) == 0 {
		a.Devices, b.Devices = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

type ioWriter = io.Writer
