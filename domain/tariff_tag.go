package domain

import (
	"errors"
	"fmt"
	"time"
)

// TariffTag is a provider's label for grouping its tariffs (the Provider
// API's tarif_tag): a tariff names at most one tag of its own provider.
// Its id is allocated outside the domain. The zero TariffTag does not exist
// yet.
type TariffTag struct {
	ID       int64
	Provider int64
	Name     string
	Enabled  bool
	Position int // order among the provider's tags, >= 0
	Deleted  bool
}

// Exists reports whether the tag was created and not deleted.
func (t TariffTag) Exists() bool { return t.ID != 0 && !t.Deleted }

// Limits of tariff tag fields.
const (
	MaxTariffTagNameLen  = 100
	MaxTariffTagPosition = 1_000_000
)

var tariffTagNameRule = textRule{max: MaxTariffTagNameLen, required: true, trimmed: true}

// TariffTagCommand is a command on a tariff tag: CreateTariffTag,
// UpdateTariffTag or DeleteTariffTag.
type TariffTagCommand interface {
	Stream() string
	tariffTagCommand()
}

// CreateTariffTag creates tag ID of Provider. Enabled defaults to true.
// That Provider exists is checked outside the domain.
type CreateTariffTag struct {
	ID       int64
	Provider int64
	Name     string
	Enabled  *bool
	Position int
}

// UpdateTariffTag changes the fields present in it. Provider may be
// present (resync jobs re-send it) but must equal the tag's provider.
type UpdateTariffTag struct {
	ID       int64
	Provider Optional[int64]
	Name     Optional[string]
	Enabled  Optional[bool]
	Position Optional[int]
}

// DeleteTariffTag deletes tag ID. Whether tariffs still name it is checked
// outside the domain.
type DeleteTariffTag struct{ ID int64 }

// Stream implements TariffTagCommand.
func (c CreateTariffTag) Stream() string { return TariffTagStream(c.ID) }

// Stream implements TariffTagCommand.
func (c UpdateTariffTag) Stream() string { return TariffTagStream(c.ID) }

// Stream implements TariffTagCommand.
func (c DeleteTariffTag) Stream() string { return TariffTagStream(c.ID) }

func (CreateTariffTag) tariffTagCommand() {}
func (UpdateTariffTag) tariffTagCommand() {}
func (DeleteTariffTag) tariffTagCommand() {}

// TariffTagDecider returns the decider of the tariff tag aggregate.
func TariffTagDecider() Decider[TariffTag, TariffTagCommand] {
	return Decider[TariffTag, TariffTagCommand]{
		Initial: func() TariffTag { return TariffTag{} },
		Evolve:  evolveTariffTag,
		Decide:  decideTariffTag,
	}
}

func evolveTariffTag(s TariffTag, e Event) TariffTag {
	switch e := e.(type) {
	case TariffTagCreated:
		return TariffTag{ID: e.TagID, Provider: e.Provider, Name: e.Name, Enabled: e.Enabled, Position: e.Position}
	case TariffTagUpdated:
		applyValue(&s.Name, e.Name)
		applyValue(&s.Enabled, e.Enabled)
		applyValue(&s.Position, e.Position)
	case TariffTagDeleted:
		s.Deleted = true
	}
	return s
}

func decideTariffTag(s TariffTag, c TariffTagCommand, _ time.Time) ([]Event, error) {
	const what = "tariff tag"
	switch c := c.(type) {
	case CreateTariffTag:
		var p problems
		p.add("id", checkID(c.ID))
		if c.Provider <= 0 {
			p.add("provider", problemRequired)
		}
		p.add("name", tariffTagNameRule.check(c.Name))
		p.add("position", checkTagPosition(c.Position))
		if err := p.err(); err != nil {
			return nil, err
		}
		if s.ID != 0 {
			return nil, alreadyExists(what, c.ID)
		}
		return []Event{TariffTagCreated{TagID: c.ID, Provider: c.Provider, Name: c.Name,
			Enabled: c.Enabled == nil || *c.Enabled, Position: c.Position}}, nil
	case UpdateTariffTag:
		if err := checkTarget(what, s.ID, s.Exists(), c.ID); err != nil {
			return nil, err
		}
		var p problems
		if v, ok := c.Provider.Get(); c.Provider.Present && (!ok || v != s.Provider) {
			p.add("provider", problemImmutable)
		}
		e := TariffTagUpdated{TagID: s.ID}
		e.Name = patchValue(&p, "name", c.Name, s.Name, tariffTagNameRule.check)
		e.Enabled = patchValue(&p, "enabled", c.Enabled, s.Enabled, nil)
		e.Position = patchValue(&p, "position", c.Position, s.Position, checkTagPosition)
		if err := p.err(); err != nil {
			return nil, err
		}
		if !e.Name.Present && !e.Enabled.Present && !e.Position.Present {
			return nil, nil
		}
		return []Event{e}, nil
	case DeleteTariffTag:
		if err := checkTarget(what, s.ID, s.Exists(), c.ID); err != nil {
			return nil, err
		}
		return []Event{TariffTagDeleted{TagID: s.ID}}, nil
	}
	return nil, errors.New("domain: unknown tariff tag command")
}

func checkTagPosition(n int) string {
	if n < 0 || n > MaxTariffTagPosition {
		return fmt.Sprintf("must be between 0 and %d", MaxTariffTagPosition)
	}
	return ""
}
