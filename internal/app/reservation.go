package app

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
)

// Event types of uniqueness reservations.
const (
	ReservationTakenType    = "ReservationTaken.v1"
	ReservationReleasedType = "ReservationReleased.v1"
)

// ReservationTaken records that Owner holds the name the stream stands for
// (a provider's login). Evicted names the previous holder when it was taken
// over from an owner that no longer exists.
type ReservationTaken struct {
	Owner   string    `json:"owner"`
	Evicted string    `json:"evicted,omitempty"`
	At      time.Time `json:"at"`
}

// EventType implements domain.Event.
func (ReservationTaken) EventType() string { return ReservationTakenType }

// AppendJSON implements domain.JSONCodec: every account create takes a
// reservation, so its JSON skips encoding/json's reflection.
func (e ReservationTaken) AppendJSON(dst []byte) ([]byte, bool) {
	dst = domain.AppendJSONString(append(dst, `{"owner":`...), e.Owner)
	if e.Evicted != "" {
		dst = domain.AppendJSONString(append(dst, `,"evicted":`...), e.Evicted)
	}
	dst, ok := domain.AppendJSONTime(append(dst, `,"at":`...), e.At)
	return append(dst, '}'), ok
}

// DecodeJSON implements domain.JSONCodec.
func (e ReservationTaken) DecodeJSON(data []byte) (domain.Event, bool) {
	r := domain.NewJSONReader(data)
	r.Expect(`{"owner":`)
	e.Owner = r.Str()
	if r.Next(`,"evicted":`) {
		e.Evicted = r.Str()
	}
	r.Expect(`,"at":`)
	e.At = r.Time()
	r.Expect(`}`)
	return e, r.OK()
}

// ReservationReleased records that Owner gave the name up.
type ReservationReleased struct {
	Owner string `json:"owner"`
}

// EventType implements domain.Event.
func (ReservationReleased) EventType() string { return ReservationReleasedType }

// LoginStream returns the reservation stream of a login within a provider,
// "login-{provider}-{hash}": the hash is an HMAC-SHA-256 of the login under
// Options.NameKey, so the login itself never reaches a stream name or an
// index key, and stays there neither after the account is erased. The
// caller normalises the login first (for example lower-cases it) if logins
// are unique case-insensitively.
func (x *Executor) LoginStream(provider int64, login string) string {
	return HashedLoginStream(x.opts.NameKey, provider, login)
}

// HashedLoginStream is LoginStream under nameKey.
func HashedLoginStream(nameKey []byte, provider int64, login string) string {
	mac := hmac.New(sha256.New, nameKey)
	mac.Write([]byte(login))
	return "login-" + strconv.FormatInt(provider, 10) + "-h" + hex.EncodeToString(mac.Sum(nil)[:16])
}

// LegacyLoginStream is the reservation stream of a login in stores written
// before logins were hashed, "login-{provider}-{login}": still consulted
// (read, never written) so that those logins stay unique.
func LegacyLoginStream(provider int64, login string) string {
	return "login-" + strconv.FormatInt(provider, 10) + "-" + login
}

// IsAlive reports whether the owner of a reservation still exists. For
// accounts that is "the account stream exists and the account is not
// deleted"; Executor.StreamExists covers the first half.
type IsAlive func(ctx context.Context, owner string) (bool, error)

// Reserve makes owner the holder of the unique name stream stands for. It
// appends ReservationTaken with "no stream" for a new name (or with the
// exact revision after a release), so of many concurrent callers, on any
// number of nodes, exactly one wins. Reserving again for the current holder
// is a no-op, so retries are safe.
//
// When the name is held by another owner, Reserve fails with an error
// matching ErrTaken (errors.As gives the *TakenError with the holder),
// unless isAlive (may be nil) reports that the holder no longer exists and
// its reservation is older than the grace period (Options.ReservationGrace):
// then the reservation is taken over. The grace period protects a holder
// that has reserved its name but not yet created itself; the work between a
// Reserve and the owner's creation must finish within it.
func (x *Executor) Reserve(ctx context.Context, stream, owner string, meta RequestMeta, isAlive IsAlive) error {
	if owner == "" {
		return opError("reserve", stream, errors.New("empty owner"))
	}
	take := reservationCmd{Take: true, Owner: owner}
	_, err := Execute(ctx, x, stream, reservationDecider, take, meta)
	var taken *TakenError
	if !errors.As(err, &taken) || isAlive == nil {
		return err
	}
	alive, aerr := isAlive(ctx, taken.Holder)
	if aerr != nil {
		return opError("reserve", stream, fmt.Errorf("check holder %s: %w", taken.Holder, aerr))
	}
	if alive {
		return err
	}
	take.Evict, take.Grace = taken.Holder, x.opts.ReservationGrace
	_, err = Execute(ctx, x, stream, reservationDecider, take, meta)
	return err
}

// Release gives up owner's reservation of stream by appending
// ReservationReleased. Releasing a name owner does not hold (never took,
// already released, or taken over) is a no-op.
func (x *Executor) Release(ctx context.Context, stream, owner string, meta RequestMeta) error {
	if owner == "" {
		return opError("release", stream, errors.New("empty owner"))
	}
	_, err := Execute(ctx, x, stream, reservationDecider, reservationCmd{Owner: owner}, meta)
	return err
}

// Holder returns the current holder of the reservation stream, "" when the
// name is free.
func (x *Executor) Holder(ctx context.Context, stream string) (string, error) {
	res, err := Execute(ctx, x, stream, reservationDecider, reservationCmd{}, RequestMeta{Actor: domain.SystemActor(), RequestID: "holder"})
	return res.State.Owner, err
}

// StreamExists reports whether stream has events. It suits an IsAlive
// callback when reservation owners are named by their streams.
func (x *Executor) StreamExists(ctx context.Context, stream string) (bool, error) {
	_, err := x.rec.Store.ReadStream(ctx, stream, eventstore.Start, 1)
	switch {
	case errors.Is(err, eventstore.ErrStreamNotFound):
		return false, nil
	case err != nil:
		return false, opError("exists", stream, err)
	}
	return true, nil
}

// reservation is the state of a reservation stream.
type reservation struct {
	Owner   string // "" when free
	TakenAt time.Time
}

// reservationCmd takes (Take) or releases (!Take) the name for Owner; an
// empty Owner only reads. Evict names a dead holder to take over from once
// its reservation is older than Grace.
type reservationCmd struct {
	Take  bool
	Owner string
	Evict string
	Grace time.Duration
}

var reservationDecider = domain.Decider[reservation, reservationCmd]{
	Initial: func() reservation { return reservation{} },
	Evolve: func(s reservation, e domain.Event) reservation {
		switch e := e.(type) {
		case ReservationTaken:
			return reservation{Owner: e.Owner, TakenAt: e.At}
		case ReservationReleased:
			return reservation{}
		}
		return s
	},
	Decide: func(s reservation, c reservationCmd, now time.Time) ([]domain.Event, error) {
		switch {
		case c.Owner == "":
			return nil, nil
		case !c.Take:
			if s.Owner != c.Owner {
				return nil, nil
			}
			return []domain.Event{ReservationReleased{Owner: c.Owner}}, nil
		case s.Owner == "":
			return []domain.Event{ReservationTaken{Owner: c.Owner, At: now}}, nil
		case s.Owner == c.Owner:
			return nil, nil
		case c.Evict != "" && s.Owner == c.Evict && now.Sub(s.TakenAt) >= c.Grace:
			return []domain.Event{ReservationTaken{Owner: c.Owner, Evicted: c.Evict, At: now}}, nil
		}
		return nil, &TakenError{Holder: s.Owner}
	},
}
