package domain

import (
	"fmt"
	"time"
)

// AccountErasedType names the event of an account's erasure.
const AccountErasedType = "AccountErased.v1"

// EraseAccount erases account ID: its personal data becomes unreadable for
// good (the application deletes the key it was encrypted under) and the
// account, with its subscriptions and devices, is gone. A deleted account
// can be erased (retention erases accounts deleted long ago). An account
// with a subscription that has not ended by now is refused with
// ErrStillSubscribed unless Force: erasing a paying subscriber is more
// likely a mistake than a request.
type EraseAccount struct {
	ID    int64
	Force bool
}

// AccountErased records an account's erasure. It carries no personal data:
// it is what remains of the subscriber in the log, with the events before
// it, whose personal values read as ErasedValue from then on.
type AccountErased struct {
	AccountID int64 `json:"account_id"`
	// WasDeleted tells whether the account had been deleted before.
	WasDeleted bool `json:"was_deleted,omitempty"`
}

// EventType implements Event.
func (AccountErased) EventType() string { return AccountErasedType }

// Stream implements AccountCommand.
func (c EraseAccount) Stream() string { return AccountStream(c.ID) }

func (EraseAccount) accountCommand() {}

// eraseAccount decides an erasure on s, which exists or was deleted (not
// erased: an erased account is not found).
func eraseAccount(s Account, c EraseAccount, now time.Time) ([]Event, error) {
	if !c.Force {
		for _, sub := range s.Subscriptions {
			if sub.Open() || sub.Stop.After(now) {
				return nil, fmt.Errorf("account %d: %w: subscription %d has not ended (erase with force=true to erase anyway)",
					s.ID, ErrStillSubscribed, sub.ID)
			}
		}
	}
	return []Event{AccountErased{AccountID: s.ID, WasDeleted: s.Deleted}}, nil
}

// evolveErased is the account after its erasure: nothing personal is kept,
// and it neither exists nor comes back.
func evolveErased(s Account) Account {
	return Account{ID: s.ID, Provider: s.Provider, Deleted: true, Erased: true}
}
