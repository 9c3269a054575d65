package domain

import "time"

// Decider is the shape of an aggregate: state S is rebuilt from its events
// with Evolve, and Decide turns a command C into new events, or an error when
// an invariant forbids it. All three functions are pure; now is the time of
// the command, passed in because the domain has no clock (callers pass UTC
// without a monotonic reading, e.g. time.Now().UTC().Round(0)).
//
// Decide returns no events for a command that changes nothing, so re-sent
// records append nothing. Evolve only applies facts: it never fails and must
// not validate, because the events already happened.
type Decider[S, C any] struct {
	Initial func() S
	Evolve  func(S, Event) S
	Decide  func(S, C, time.Time) ([]Event, error)
}

// Fold applies events to state in order.
func (d Decider[S, C]) Fold(state S, events ...Event) S {
	for _, e := range events {
		state = d.Evolve(state, e)
	}
	return state
}

// Replay returns the state after events, starting from Initial.
func (d Decider[S, C]) Replay(events ...Event) S {
	return d.Fold(d.Initial(), events...)
}
