// Package domaintest runs given–when–then specifications against a
// domain.Decider, in the manner of Eventuous's AggregateSpec and
// eventhorizon's command tables:
//
//	spec := domaintest.For(domain.AccountDecider()).Codec(registry)
//	spec.Given(created).When(disable).Then(t, disabled)
//	spec.Given(created, stb).When(bindTV).ThenError(t, domain.ErrDeviceLimit)
//
// The package Example runs these lines; Spec.Run takes a table of Cases
// instead.
//
// Every run also checks that Decide is deterministic (two runs on freshly
// replayed states give equal results) and, with Codec, that every given and
// emitted event survives an Encode/Decode round trip through the registry.
package domaintest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"tvsm/domain"
)

// TB is the part of testing.TB a Spec uses.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
}

// Now returns the pinned clock of a Spec without At: 2026-01-02T03:04:05Z.
func Now() time.Time { return time.Date(2026, time.January, 2, 3, 4, 5, 0, time.UTC) }

// Spec is an immutable given–when–then specification: every method returns a
// modified copy, so a base Spec can be shared by many cases.
type Spec[S, C any] struct {
	decider  domain.Decider[S, C]
	registry *domain.Registry
	now      time.Time
	given    []domain.Event
	when     C
	hasWhen  bool
}

// For starts a specification of d, with the clock pinned at Now().
func For[S, C any](d domain.Decider[S, C]) Spec[S, C] {
	return Spec[S, C]{decider: d, now: Now()}
}

// At pins the clock Decide receives.
func (s Spec[S, C]) At(now time.Time) Spec[S, C] {
	s.now = now
	return s
}

// Codec makes every run round-trip given and emitted events through r.
func (s Spec[S, C]) Codec(r *domain.Registry) Spec[S, C] {
	s.registry = r
	return s
}

// Given sets the history the state is replayed from.
func (s Spec[S, C]) Given(events ...domain.Event) Spec[S, C] {
	s.given = append([]domain.Event(nil), events...)
	return s
}

// When sets the command to decide.
func (s Spec[S, C]) When(cmd C) Spec[S, C] {
	s.when, s.hasWhen = cmd, true
	return s
}

// Then checks that the command succeeds and emits exactly want, in order
// (none at all when want is empty: the command changes nothing).
func (s Spec[S, C]) Then(t TB, want ...domain.Event) {
	t.Helper()
	out, ok := s.run(t)
	got, err := out.events, out.err
	if !ok {
		return
	}
	if err != nil {
		t.Errorf("Decide: unexpected error: %v\nwant events:%s", err, list(want))
		return
	}
	if !reflect.DeepEqual(nonNil(got), nonNil(want)) {
		t.Errorf("Decide emitted wrong events\ngot:%s\nwant:%s", list(got), list(want))
	}
}

// ThenError checks that the command fails with an error matching target
// (errors.Is) and emits no events.
func (s Spec[S, C]) ThenError(t TB, target error) {
	t.Helper()
	if target == nil {
		t.Errorf("ThenError: nil target; use Then for success")
		return
	}
	out, ok := s.run(t)
	got, err := out.events, out.err
	if !ok {
		return
	}
	if err == nil {
		t.Errorf("Decide: no error, want %v\ngot events:%s", target, list(got))
		return
	}
	if !errors.Is(err, target) {
		t.Errorf("Decide: error %v, want one matching %v", err, target)
	}
	if len(got) > 0 {
		t.Errorf("Decide returned events together with error %v:%s", err, list(got))
	}
}

// ThenState checks the state after the given events and, when a command is
// set and succeeds, the events it emits. The state is compared with
// reflect.DeepEqual.
func (s Spec[S, C]) ThenState(t TB, want S) {
	t.Helper()
	if !s.checkDecider(t) || !s.roundTrip(t, "given", s.given) {
		return
	}
	var events []domain.Event
	if s.hasWhen {
		out, ok := s.run(t)
		if !ok {
			return
		}
		if out.err != nil {
			t.Errorf("Decide: unexpected error: %v", out.err)
			return
		}
		events = out.events
	}
	state := s.decider.Fold(s.decider.Replay(s.given...), events...)
	if !reflect.DeepEqual(state, want) {
		t.Errorf("wrong state\ngot:  %+v\nwant: %+v", state, want)
	}
}

// run decides the command twice on freshly replayed states, checks the two
// results agree and round-trips events. ok is false when it reported a
// failure already.
func (s Spec[S, C]) run(t TB) (outcome, bool) {
	t.Helper()
	if !s.checkDecider(t) {
		return outcome{}, false
	}
	if !s.hasWhen {
		t.Errorf("spec has no When")
		return outcome{}, false
	}
	if !s.roundTrip(t, "given", s.given) {
		return outcome{}, false
	}
	events, err := s.decider.Decide(s.decider.Replay(s.given...), s.when, s.now)
	again, err2 := s.decider.Decide(s.decider.Replay(s.given...), s.when, s.now)
	if !reflect.DeepEqual(nonNil(events), nonNil(again)) || errText(err) != errText(err2) {
		t.Errorf("Decide is not deterministic\nfirst:%s error %v\nsecond:%s error %v", list(events), err, list(again), err2)
		return outcome{}, false
	}
	if err == nil && !s.roundTrip(t, "emitted", events) {
		return outcome{}, false
	}
	return outcome{events: events, err: err}, true
}

// outcome is the result of one Decide.
type outcome struct {
	events []domain.Event
	err    error
}

func (s Spec[S, C]) checkDecider(t TB) bool {
	t.Helper()
	d := s.decider
	if d.Initial == nil || d.Evolve == nil || d.Decide == nil {
		t.Errorf("Decider needs Initial, Evolve and Decide")
		return false
	}
	return true
}

// roundTrip checks that each event encodes and decodes to an equal value.
func (s Spec[S, C]) roundTrip(t TB, what string, events []domain.Event) bool {
	t.Helper()
	if s.registry == nil {
		return true
	}
	ok := true
	for i, e := range events {
		name, data, err := s.registry.Encode(e)
		if err != nil {
			t.Errorf("%s event [%d]: %v", what, i, err)
			ok = false
			continue
		}
		back, err := s.registry.Decode(name, data)
		if err != nil {
			t.Errorf("%s event [%d]: %v", what, i, err)
			ok = false
			continue
		}
		if !reflect.DeepEqual(back, e) {
			t.Errorf("%s event [%d] %s does not survive a JSON round trip\nbefore: %#v\nafter:  %#v\njson:   %s", what, i, name, e, back, data)
			ok = false
		}
	}
	return ok
}

// Case is one row of a decision table.
type Case[S, C any] struct {
	Name  string
	Given []domain.Event
	When  C
	Then  []domain.Event // expected events when Err is nil
	Err   error          // expected error (errors.Is); Then must be empty
}

// Run runs each case as a subtest of t.
func (s Spec[S, C]) Run(t *testing.T, cases ...Case[S, C]) {
	t.Helper()
	for i, c := range cases {
		name := c.Name
		if name == "" {
			name = fmt.Sprintf("case%d", i)
		}
		t.Run(name, func(t *testing.T) {
			t.Helper()
			spec := s.Given(c.Given...).When(c.When)
			switch {
			case c.Err != nil && len(c.Then) > 0:
				t.Errorf("case sets both Then and Err")
			case c.Err != nil:
				spec.ThenError(t, c.Err)
			default:
				spec.Then(t, c.Then...)
			}
		})
	}
}

func nonNil(events []domain.Event) []domain.Event {
	if events == nil {
		return []domain.Event{}
	}
	return events
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func list(events []domain.Event) string {
	if len(events) == 0 {
		return " (none)"
	}
	var b strings.Builder
	for i, e := range events {
		fmt.Fprintf(&b, "\n  [%d] %s %#v", i, eventType(e), e)
	}
	return b.String()
}

// eventType returns e's type name without calling a method on a nil pointer.
func eventType(e domain.Event) string {
	if e == nil {
		return "<nil>"
	}
	if v := reflect.ValueOf(e); v.Kind() == reflect.Pointer && v.IsNil() {
		return "<nil>"
	}
	return e.EventType()
}
