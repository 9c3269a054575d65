package command

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
)

// Checks shared by the handlers: a decision made only to validate, and
// field problems found outside the domain added to the domain's.

// dryRun decides cmd on the aggregate's initial state, so a create with bad
// fields fails before it allocates an id or records an Idempotency-Key.
func dryRun[S, C any](d domain.Decider[S, C], cmd C) error {
	return dryRunOn(d, d.Initial(), cmd)
}

// dryRunOn decides cmd on state s and returns only the error: the
// validation of a command that fails for a reason found outside the domain,
// so that one answer names every bad field. The Admin API's aggregates do
// not look at the command time.
func dryRunOn[S, C any](d domain.Decider[S, C], s S, cmd C) error {
	_, err := d.Decide(s, cmd, time.Unix(0, 0).UTC())
	return err
}

// withProblems adds the field problems found outside the domain (unknown
// references, scope) to err, a decision's error, so that one answer names
// every bad field. A field the domain already complained about keeps the
// domain's problem. Errors other than validation errors win as they are.
func withProblems(err error, extra map[string]string) error {
	var v *domain.ValidationError
	switch {
	case err == nil && len(extra) == 0:
		return nil
	case err == nil:
		return &domain.ValidationError{Fields: maps.Clone(extra)}
	case !errors.As(err, &v):
		return err
	}
	fields := maps.Clone(v.Fields)
	for k, p := range extra {
		if _, ok := fields[k]; !ok {
			fields[k] = p
		}
	}
	return &domain.ValidationError{Fields: fields}
}

// addFieldProblem records problem for field in *m unless it has one.
func addFieldProblem(m *map[string]string, field, problem string) {
	if *m == nil {
		*m = map[string]string{}
	}
	if _, ok := (*m)[field]; !ok {
		(*m)[field] = problem
	}
}

// notFound reports that the object what id does not exist.
func notFound(what string, id any) error {
	return fmt.Errorf("%s %v: %w", what, id, domain.ErrNotFound)
}

// missingIDs returns the ids of want that are neither in have nor known to
// exist: the new references of a list that do not resolve.
func missingIDs(want, have []int64, exists func(int64) bool) []int64 {
	var missing []int64
	for _, id := range want {
		if id <= 0 || slices.Contains(have, id) || slices.Contains(missing, id) {
			continue // non-positive ids are the domain's to report
		}
		if !exists(id) {
			missing = append(missing, id)
		}
	}
	return missing
}

// unknownIDsProblem is the field problem for ids that do not exist.
func unknownIDsProblem(what string, ids []int64) string {
	if len(ids) == 1 {
		return fmt.Sprintf("unknown %s %d", what, ids[0])
	}
	return fmt.Sprintf("unknown %ss %v", what, ids)
}

// later returns the later of two positions.
func laterPosition(a, b eventstore.Position) eventstore.Position {
	if b.After(a) {
		return b
	}
	return a
}
