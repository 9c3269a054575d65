package domain

import (
	"errors"
	"slices"
	"time"
)

// Tariff is a provider's plan: a named list of channels that subscriptions
// refer to. Its id is allocated outside the domain. The zero Tariff does not
// exist yet.
type Tariff struct {
	ID          int64
	Provider    int64
	Name        string
	Enabled     bool
	Channels    []int64 // channel ids, no repeats, in the order given
	Description string  // "" for none
	// Tag is the tariff tag of the same provider the tariff is labelled
	// with; nil for none.
	Tag     *int64
	Deleted bool
}

// Exists reports whether the tariff was created and not deleted.
func (t Tariff) Exists() bool { return t.ID != 0 && !t.Deleted }

// Limits of tariff fields. The billing interface's tariff model recommends
// names up to 45 and descriptions up to 300 characters because client cards
// show no more; the domain accepts longer text (admins paste what they have)
// and leaves the recommendation to the admin UI.
const (
	MaxTariffNameLen                = 100
	MaxTariffDescriptionLen         = 1000
	MaxTariffChannels               = 10000
	RecommendedTariffNameLen        = 45
	RecommendedTariffDescriptionLen = 300
)

// TariffTagField is the wire name of a tariff's tag, as TVIP spells it.
const TariffTagField = "tarif_tag"

var (
	tariffNameRule        = textRule{max: MaxTariffNameLen, required: true, trimmed: true}
	tariffDescriptionRule = textRule{max: MaxTariffDescriptionLen, multiline: true}
	errTariffTarget       = errors.New("tariff command decided on another tariff's state")
)

// TariffCommand is a command on a tariff: CreateTariff, UpdateTariff or
// DeleteTariff.
type TariffCommand interface {
	Stream() string
	tariffCommand()
}

// CreateTariff creates tariff ID of Provider. Enabled defaults to true;
// repeated channel ids are dropped. That Provider, the channels and the tag
// exist (the tag as one of Provider's) is checked outside the domain.
type CreateTariff struct {
	ID          int64
	Provider    int64
	Name        string
	Enabled     *bool
	Channels    []int64
	Description string
	Tag         *int64
}

// UpdateTariff changes the fields present in it. Provider may be present
// (resync jobs re-send it) but must equal the tariff's provider. A null
// Channels, Description or Tag clears it.
type UpdateTariff struct {
	ID          int64
	Provider    Optional[int64]
	Name        Optional[string]
	Enabled     Optional[bool]
	Channels    Optional[[]int64]
	Description Optional[string]
	Tag         Optional[int64]
}

// DeleteTariff deletes tariff ID. Subscriptions that refer to it are left
// alone: they are history.
type DeleteTariff struct{ ID int64 }

// Stream implements TariffCommand.
func (c CreateTariff) Stream() string { return TariffStream(c.ID) }

// Stream implements TariffCommand.
func (c UpdateTariff) Stream() string { return TariffStream(c.ID) }

// Stream implements TariffCommand.
func (c DeleteTariff) Stream() string { return TariffStream(c.ID) }

func (CreateTariff) tariffCommand() {}
func (UpdateTariff) tariffCommand() {}
func (DeleteTariff) tariffCommand() {}

// TariffDecider returns the decider of the tariff aggregate.
func TariffDecider() Decider[Tariff, TariffCommand] {
	return Decider[Tariff, TariffCommand]{
		Initial: func() Tariff { return Tariff{} },
		Evolve:  evolveTariff,
		Decide:  decideTariff,
	}
}

func evolveTariff(s Tariff, e Event) Tariff {
	switch e := e.(type) {
	case TariffCreated:
		return Tariff{
			ID:          e.TariffID,
			Provider:    e.Provider,
			Name:        e.Name,
			Enabled:     e.Enabled,
			Channels:    e.Channels,
			Description: e.Description,
			Tag:         e.Tag,
		}
	case TariffUpdated:
		applyValue(&s.Name, e.Name)
		applyValue(&s.Enabled, e.Enabled)
		applyValue(&s.Channels, e.Channels)
		applyValue(&s.Description, e.Description)
		applyNullable(&s.Tag, e.Tag)
	case TariffDeleted:
		s.Deleted = true
	}
	return s
}

func decideTariff(s Tariff, c TariffCommand, _ time.Time) ([]Event, error) {
	switch c := c.(type) {
	case CreateTariff:
		return createTariff(s, c)
	case UpdateTariff:
		if err := checkTariffTarget(s, c.ID); err != nil {
			return nil, err
		}
		return updateTariff(s, c)
	case DeleteTariff:
		if err := checkTariffTarget(s, c.ID); err != nil {
			return nil, err
		}
		return []Event{TariffDeleted{TariffID: s.ID}}, nil
	}
	return nil, errors.New("domain: unknown tariff command")
}

// checkTariffTarget returns ErrNotFound unless tariff id exists in s.
func checkTariffTarget(s Tariff, id int64) error {
	switch {
	case !s.Exists():
		return notFound("tariff", id)
	case s.ID != id:
		return errTariffTarget
	}
	return nil
}

func createTariff(s Tariff, c CreateTariff) ([]Event, error) {
	var p problems
	p.add("id", checkID(c.ID))
	if c.Provider <= 0 {
		p.add("provider", problemRequired)
	}
	p.add("name", tariffNameRule.check(c.Name))
	channels, problem := cloneIDs(c.Channels, MaxTariffChannels)
	p.add("channels", problem)
	p.add("description", tariffDescriptionRule.check(c.Description))
	if c.Tag != nil {
		p.add(TariffTagField, checkID(*c.Tag))
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	if s.ID != 0 {
		return nil, alreadyExists("tariff", c.ID)
	}
	return []Event{TariffCreated{
		TariffID:    c.ID,
		Provider:    c.Provider,
		Name:        c.Name,
		Enabled:     c.Enabled == nil || *c.Enabled,
		Channels:    channels,
		Description: c.Description,
		Tag:         c.Tag,
	}}, nil
}

func updateTariff(s Tariff, c UpdateTariff) ([]Event, error) {
	var p problems
	if v, ok := c.Provider.Get(); c.Provider.Present && (!ok || v != s.Provider) {
		p.add("provider", problemImmutable)
	}
	e := TariffUpdated{TariffID: s.ID}
	e.Name = patchValue(&p, "name", c.Name, s.Name, tariffNameRule.check)
	e.Enabled = patchValue(&p, "enabled", c.Enabled, s.Enabled, nil)
	e.Description = patchValue(&p, "description", clearable(c.Description), s.Description, tariffDescriptionRule.check)
	e.Tag = patchNullable(&p, TariffTagField, c.Tag, s.Tag, checkID)
	if c.Channels.Present {
		given, _ := c.Channels.Get() // null clears
		channels, problem := cloneIDs(given, MaxTariffChannels)
		p.add("channels", problem)
		if problem == "" && !slices.Equal(channels, s.Channels) {
			e.Channels = Some(channels)
		}
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	if !e.Name.Present && !e.Enabled.Present && !e.Channels.Present && !e.Description.Present && !e.Tag.Present {
		return nil, nil
	}
	return []Event{e}, nil
}
