package domain

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ActorKind says who caused an event.
type ActorKind string

// The actor kinds.
const (
	ActorAdmin  ActorKind = "admin"  // an administrator, by login
	ActorDevice ActorKind = "device" // a client device, by numeric device id
	ActorSystem ActorKind = "system" // the service itself (scheduler, bootstrap); no id
)

// MaxActorIDLen is the maximum length of an admin login in an Actor, in bytes.
const MaxActorIDLen = 256

// ErrInvalidActor reports an actor that is malformed or of an unknown kind.
var ErrInvalidActor = errors.New("invalid actor")

// Actor is who caused an event. Its text form, used in event metadata, is
// "admin:<login>", "device:<id>" or "system": the kind, then for admins and
// devices a colon and the id. Logins may contain colons (the text is split at
// the first one) but no spaces or control characters; device ids are
// positive decimal integers without leading zeros. The zero Actor is invalid.
type Actor struct {
	Kind ActorKind
	ID   string
}

// AdminActor returns the actor for the administrator with the given login.
func AdminActor(login string) Actor { return Actor{Kind: ActorAdmin, ID: login} }

// DeviceActor returns the actor for the device with the given id. Device ids
// are positive; for id <= 0 the result fails Validate.
func DeviceActor(id int64) Actor {
	return Actor{Kind: ActorDevice, ID: strconv.FormatInt(id, 10)}
}

// SystemActor returns the actor for the service itself.
func SystemActor() Actor { return Actor{Kind: ActorSystem} }

// ParseActor parses the text form of an actor (see Actor). The error wraps
// ErrInvalidActor.
func ParseActor(s string) (Actor, error) {
	kind, id, hasID := strings.Cut(s, ":")
	a := Actor{Kind: ActorKind(kind), ID: id}
	if a.Kind == ActorSystem && hasID {
		return Actor{}, fmt.Errorf("%w: %q: system actor takes no id", ErrInvalidActor, s)
	}
	if err := a.Validate(); err != nil {
		return Actor{}, err
	}
	return a, nil
}

// Validate reports whether a is well formed. The error wraps ErrInvalidActor.
func (a Actor) Validate() error {
	switch a.Kind {
	case ActorSystem:
		if a.ID != "" {
			return fmt.Errorf("%w: system actor takes no id, got %q", ErrInvalidActor, a.ID)
		}
	case ActorAdmin:
		if err := validateLogin(a.ID); err != nil {
			return fmt.Errorf("%w: admin login %q: %s", ErrInvalidActor, a.ID, err)
		}
	case ActorDevice:
		if _, ok := parseDeviceID(a.ID); !ok {
			return fmt.Errorf("%w: device id %q: want a positive decimal integer", ErrInvalidActor, a.ID)
		}
	default:
		return fmt.Errorf("%w: unknown kind %q (want admin, device or system)", ErrInvalidActor, a.Kind)
	}
	return nil
}

// String returns the text form of a ("admin:alice", "device:42", "system").
func (a Actor) String() string {
	if a.ID == "" {
		return string(a.Kind)
	}
	return string(a.Kind) + ":" + a.ID
}

// DeviceID returns the device id of a device actor; ok is false otherwise.
func (a Actor) DeviceID() (id int64, ok bool) {
	if a.Kind != ActorDevice {
		return 0, false
	}
	return parseDeviceID(a.ID)
}

// MarshalText implements encoding.TextMarshaler; it rejects invalid actors.
func (a Actor) MarshalText() ([]byte, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	return []byte(a.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseActor.
func (a *Actor) UnmarshalText(text []byte) error {
	v, err := ParseActor(string(text))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

func validateLogin(login string) error {
	switch {
	case login == "":
		return errors.New("empty")
	case len(login) > MaxActorIDLen:
		return fmt.Errorf("longer than %d bytes", MaxActorIDLen)
	case !utf8.ValidString(login):
		return errors.New("not valid UTF-8")
	}
	for _, r := range login {
		if unicode.IsSpace(r) || !unicode.IsGraphic(r) {
			return fmt.Errorf("contains %U", r)
		}
	}
	return nil
}

// parseDeviceID accepts exactly the output of strconv.FormatInt for a
// positive id, so that parsing and formatting round-trip.
func parseDeviceID(s string) (int64, bool) {
	if s == "" || s[0] < '1' || s[0] > '9' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	id, err := strconv.ParseInt(s, 10, 64)
	return id, err == nil
}
