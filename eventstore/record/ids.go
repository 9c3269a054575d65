package record

import "tvsm/eventstore"

// IDs is how the events of one append are named (see the package
// documentation, "Event ids"). The zero IDs names nothing: it is for a
// Batch named later with Batch.Name, once its encoded form is known.
type IDs struct {
	scheme scheme
	seq    uint64
	name   string
	list   []eventstore.EventID
}

type scheme uint8

const (
	unnamed scheme = iota
	derived
	sequenced
	random
	explicit
)

// Derived names event i eventstore.DeriveEventID(name, i).
func Derived(name string) IDs { return IDs{scheme: derived, name: name} }

// Sequenced names event i eventstore.SequencedEventID(seq, name, i).
func Sequenced(seq uint64, name string) IDs { return IDs{scheme: sequenced, seq: seq, name: name} }

// Random names each event with a new eventstore.NewEventID.
func Random() IDs { return IDs{scheme: random} }

// Explicit names event i ids[i]. Events beyond the list stay unnamed, which
// the store rejects (ErrInvalidAppend).
func Explicit(ids ...eventstore.EventID) IDs { return IDs{scheme: explicit, list: ids} }

// ID returns the id of event i.
func (n IDs) ID(i int) eventstore.EventID {
	switch n.scheme {
	case derived:
		return eventstore.DeriveEventID(n.name, i)
	case sequenced:
		return eventstore.SequencedEventID(n.seq, n.name, i)
	case random:
		return eventstore.NewEventID()
	case explicit:
		if i < len(n.list) {
			return n.list[i]
		}
	}
	return eventstore.EventID{}
}
