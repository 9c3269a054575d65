package domaintest_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/domain/domaintest"
)

// A tiny counter aggregate, defined only for these tests: it counts up to a
// maximum and records when it was last incremented.

const (
	incrementedType = "Incremented.v1"
	resetType       = "Reset.v1"
)

type incremented struct {
	By int       `json:"by"`
	At time.Time `json:"at"`
}

func (incremented) EventType() string { return incrementedType }

type reset struct{}

func (reset) EventType() string { return resetType }

type counter struct {
	Value int
	Last  time.Time
}

type command struct {
	Increment int  // add this much
	Reset     bool // or reset to zero
}

var errOverMax = errors.New("counter would exceed its maximum")

const maxValue = 10

var counterDecider = domain.Decider[counter, command]{
	Initial: func() counter { return counter{} },
	Evolve: func(s counter, e domain.Event) counter {
		switch e := e.(type) {
		case incremented:
			s.Value += e.By
			s.Last = e.At
		case reset:
			s.Value = 0
		}
		return s
	},
	Decide: func(s counter, c command, now time.Time) ([]domain.Event, error) {
		switch {
		case c.Reset && s.Value == 0:
			return nil, nil // changes nothing, appends nothing
		case c.Reset:
			return []domain.Event{reset{}}, nil
		case c.Increment <= 0:
			return nil, fmt.Errorf("increment %d: must be positive", c.Increment)
		case s.Value+c.Increment > maxValue:
			return nil, fmt.Errorf("increment %d at %d: %w", c.Increment, s.Value, errOverMax)
		}
		return []domain.Event{incremented{By: c.Increment, At: now}}, nil
	},
}

func counterRegistry() *domain.Registry {
	r := domain.NewRegistry()
	r.Register(incrementedType, func() domain.Event { return new(incremented) })
	r.Register(resetType, func() domain.Event { return reset{} })
	return r
}

func TestCounterSpec(t *testing.T) {
	spec := domaintest.For(counterDecider).Codec(counterRegistry())
	now := domaintest.Now()

	spec.Given().When(command{Increment: 3}).Then(t, incremented{By: 3, At: now})
	spec.Given(incremented{By: 9}).When(command{Increment: 2}).ThenError(t, errOverMax)
	spec.Given(incremented{By: 4}).When(command{Reset: true}).Then(t, reset{})
	spec.Given().When(command{Reset: true}).Then(t) // nothing to reset

	later := now.Add(time.Hour)
	spec.At(later).Given(incremented{By: 1, At: now}).When(command{Increment: 1}).
		ThenState(t, counter{Value: 2, Last: later})
	spec.Given(incremented{By: 1}, incremented{By: 2}).ThenState(t, counter{Value: 3})
}

func TestCounterTable(t *testing.T) {
	now := domaintest.Now()
	domaintest.For(counterDecider).Codec(counterRegistry()).Run(t,
		domaintest.Case[counter, command]{
			Name: "first increment",
			When: command{Increment: 1},
			Then: []domain.Event{incremented{By: 1, At: now}},
		},
		domaintest.Case[counter, command]{
			Name:  "up to the maximum",
			Given: []domain.Event{incremented{By: 5}, incremented{By: 4}},
			When:  command{Increment: 1},
			Then:  []domain.Event{incremented{By: 1, At: now}},
		},
		domaintest.Case[counter, command]{
			Name:  "past the maximum",
			Given: []domain.Event{incremented{By: 10}},
			When:  command{Increment: 1},
			Err:   errOverMax,
		},
		domaintest.Case[counter, command]{
			Name:  "reset after a reset changes nothing",
			Given: []domain.Event{incremented{By: 2}, reset{}},
			When:  command{Reset: true},
		},
	)
}

// recorder is a domaintest.TB that collects failures instead of failing.
type recorder struct{ failures []string }

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

// expectFailure runs check against a recorder and wants one failure
// containing mention.
func expectFailure(t *testing.T, mention string, check func(domaintest.TB)) {
	t.Helper()
	var r recorder
	check(&r)
	if len(r.failures) == 0 {
		t.Errorf("no failure reported, want one mentioning %q", mention)
		return
	}
	if !strings.Contains(strings.Join(r.failures, "\n"), mention) {
		t.Errorf("failures %q do not mention %q", r.failures, mention)
	}
}

func TestSpecReportsFailures(t *testing.T) {
	spec := domaintest.For(counterDecider).Codec(counterRegistry())
	now := domaintest.Now()

	expectFailure(t, "wrong events", func(tb domaintest.TB) {
		spec.When(command{Increment: 1}).Then(tb, incremented{By: 2, At: now})
	})
	expectFailure(t, "wrong events", func(tb domaintest.TB) { // pointers are not values
		spec.When(command{Increment: 1}).Then(tb, &incremented{By: 1, At: now})
	})
	expectFailure(t, "wrong events", func(tb domaintest.TB) {
		spec.When(command{Increment: 1}).Then(tb)
	})
	expectFailure(t, "unexpected error", func(tb domaintest.TB) {
		spec.When(command{Increment: -1}).Then(tb)
	})
	expectFailure(t, "no error", func(tb domaintest.TB) {
		spec.When(command{Increment: 1}).ThenError(tb, errOverMax)
	})
	expectFailure(t, "want one matching", func(tb domaintest.TB) {
		spec.When(command{Increment: -1}).ThenError(tb, errOverMax)
	})
	expectFailure(t, "nil target", func(tb domaintest.TB) {
		spec.When(command{Increment: 1}).ThenError(tb, nil)
	})
	expectFailure(t, "no When", func(tb domaintest.TB) {
		spec.Given(reset{}).Then(tb)
	})
	expectFailure(t, "wrong state", func(tb domaintest.TB) {
		spec.Given(incremented{By: 1}).ThenState(tb, counter{Value: 2})
	})
	expectFailure(t, "needs Initial", func(tb domaintest.TB) {
		domaintest.For(domain.Decider[counter, command]{}).When(command{}).Then(tb)
	})
}

func TestSpecChecksCodec(t *testing.T) {
	unregistered := domain.NewRegistry()
	unregistered.Register(resetType, func() domain.Event { return reset{} })
	spec := domaintest.For(counterDecider).Codec(unregistered)
	expectFailure(t, "emitted event [0]", func(tb domaintest.TB) {
		spec.When(command{Increment: 1}).Then(tb, incremented{By: 1, At: domaintest.Now()})
	})
	expectFailure(t, "given event [0]", func(tb domaintest.TB) {
		spec.Given(incremented{By: 1}).When(command{Reset: true}).Then(tb, reset{})
	})
	// A time in a named zone does not survive the JSON round trip unchanged,
	// which is why decide functions get (and events carry) UTC times.
	msk := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("MSK", 3*3600))
	expectFailure(t, "does not survive a JSON round trip", func(tb domaintest.TB) {
		domaintest.For(counterDecider).Codec(counterRegistry()).At(msk).
			When(command{Increment: 1}).ThenState(tb, counter{})
	})
}

func TestSpecChecksDeterminism(t *testing.T) {
	calls := 0
	flaky := counterDecider
	flaky.Decide = func(s counter, c command, now time.Time) ([]domain.Event, error) {
		calls++
		return []domain.Event{incremented{By: calls, At: now}}, nil
	}
	expectFailure(t, "not deterministic", func(tb domaintest.TB) {
		domaintest.For(flaky).When(command{Increment: 1}).Then(tb, incremented{By: 1, At: domaintest.Now()})
	})
}

func TestSpecRejectsEventsWithError(t *testing.T) {
	sloppy := counterDecider
	sloppy.Decide = func(counter, command, time.Time) ([]domain.Event, error) {
		return []domain.Event{reset{}}, errOverMax
	}
	expectFailure(t, "together with error", func(tb domaintest.TB) {
		domaintest.For(sloppy).When(command{}).ThenError(tb, errOverMax)
	})
}

func TestSpecIsImmutable(t *testing.T) {
	base := domaintest.For(counterDecider).Given(incremented{By: 9})
	_ = base.Given(reset{})
	base.When(command{Increment: 2}).ThenError(t, errOverMax)
}

func TestDeciderReplay(t *testing.T) {
	got := counterDecider.Replay(incremented{By: 2}, reset{}, incremented{By: 3})
	if got.Value != 3 {
		t.Errorf("Replay = %+v, want Value 3", got)
	}
	if got := counterDecider.Fold(counter{Value: 1}, incremented{By: 1}); got.Value != 2 {
		t.Errorf("Fold = %+v, want Value 2", got)
	}
}
