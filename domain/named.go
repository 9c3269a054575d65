package domain

import "fmt"

// Rules shared by the aggregates that are no more than an id and a name:
// channel categories, regions and device types. Each keeps its own state
// type, commands and events; namedRules makes their decisions alike.
type namedRules struct {
	what  string // "region", in errors
	field string // the wire name of the name: "name", "device_type"
	rule  textRule
}

// create checks a create of id named name on an aggregate whose state has
// id stateID (0: never created).
func (r namedRules) create(stateID, id int64, name string) error {
	var p problems
	p.add("id", checkID(id))
	p.add(r.field, r.rule.check(name))
	if err := p.err(); err != nil {
		return err
	}
	if stateID != 0 {
		return alreadyExists(r.what, id)
	}
	return nil
}

// rename checks a rename of id to name (absent: unchanged) on the state
// (stateID, live, cur) and returns the new name, absent when it does not
// change.
func (r namedRules) rename(stateID int64, live bool, cur string, id int64, name Optional[string]) (Optional[string], error) {
	if err := checkTarget(r.what, stateID, live, id); err != nil {
		return Optional[string]{}, err
	}
	var p problems
	v := patchValue(&p, r.field, name, cur, r.rule.check)
	return v, p.err()
}

// checkTarget returns ErrNotFound unless the aggregate what id is the live
// one of the state (stateID, live); a state of another id is a programming
// error.
func checkTarget(what string, stateID int64, live bool, id int64) error {
	switch {
	case !live:
		return notFound(what, id)
	case stateID != id:
		return fmt.Errorf("%s command decided on the state of %s %d", what, what, stateID)
	}
	return nil
}
