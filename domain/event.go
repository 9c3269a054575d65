package domain

import (
	"fmt"
	"strconv"
)

// Event is a domain event: a plain struct, immutable once raised, whose
// EventType method has a value receiver and returns the constant name the
// struct is registered under, for example
//
//	const AccountCreatedType = "AccountCreated.v1"
//
//	type AccountCreated struct { ... }
//
//	func (AccountCreated) EventType() string { return AccountCreatedType }
//
// Events are passed and stored as values (AccountCreated, not
// *AccountCreated); Registry.Decode returns values too, so a decoded event
// compares equal to the one a decide function produced.
type Event interface {
	EventType() string
}

// MaxEventTypeLen is the maximum length of an event type name in bytes.
const MaxEventTypeLen = 128

// ValidateEventType reports whether name is a valid event type name: at most
// MaxEventTypeLen bytes matching ^[A-Z][A-Za-z0-9]*\.v[1-9][0-9]*$ such as
// AccountCreated.v1. The error wraps ErrInvalidEventType.
func ValidateEventType(name string) error {
	if _, _, ok := splitEventType(name); !ok {
		return fmt.Errorf("%w: %q (want AggregateVerbed.vN, e.g. AccountCreated.v1)", ErrInvalidEventType, name)
	}
	return nil
}

// EventTypeVersion splits a valid event type name into its base and version:
// "AccountCreated.v2" gives "AccountCreated", 2. ok is false for an invalid
// name or a version that does not fit an int.
func EventTypeVersion(name string) (base string, version int, ok bool) {
	base, digits, ok := splitEventType(name)
	if !ok {
		return "", 0, false
	}
	v, err := strconv.Atoi(digits)
	if err != nil {
		return "", 0, false
	}
	return base, v, true
}

// splitEventType validates name without regexp and returns its base and
// version digits.
func splitEventType(name string) (base, digits string, ok bool) {
	if len(name) == 0 || len(name) > MaxEventTypeLen || !isUpper(name[0]) {
		return "", "", false
	}
	i := 1
	for i < len(name) && isAlnum(name[i]) {
		i++
	}
	base = name[:i]
	rest := name[i:]
	if len(rest) < 3 || rest[0] != '.' || rest[1] != 'v' || rest[2] == '0' {
		return "", "", false
	}
	digits = rest[2:]
	for j := 0; j < len(digits); j++ {
		if digits[j] < '0' || digits[j] > '9' {
			return "", "", false
		}
	}
	return base, digits, true
}

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }

func isAlnum(c byte) bool {
	return isUpper(c) || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
}
