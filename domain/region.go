package domain

import (
	"errors"
	"time"
)

// Region is a region of the operator's network; a provider may name the
// region it serves (Provider.RegionTag). Regions belong to no provider.
// Its id is allocated outside the domain. The zero Region does not exist
// yet.
type Region struct {
	ID      int64
	Name    string
	Deleted bool
}

// Exists reports whether the region was created and not deleted.
func (r Region) Exists() bool { return r.ID != 0 && !r.Deleted }

// MaxRegionNameLen is the maximum length of a region name.
const MaxRegionNameLen = 100

var regionRules = namedRules{what: "region", field: "name",
	rule: textRule{max: MaxRegionNameLen, required: true, trimmed: true}}

// RegionCommand is a command on a region: CreateRegion, UpdateRegion or
// DeleteRegion.
type RegionCommand interface {
	Stream() string
	regionCommand()
}

// CreateRegion creates region ID.
type CreateRegion struct {
	ID   int64
	Name string
}

// UpdateRegion changes the fields present in it (only the name).
type UpdateRegion struct {
	ID   int64
	Name Optional[string]
}

// DeleteRegion deletes region ID. Whether providers still name it is
// checked outside the domain.
type DeleteRegion struct{ ID int64 }

// Stream implements RegionCommand.
func (c CreateRegion) Stream() string { return RegionStream(c.ID) }

// Stream implements RegionCommand.
func (c UpdateRegion) Stream() string { return RegionStream(c.ID) }

// Stream implements RegionCommand.
func (c DeleteRegion) Stream() string { return RegionStream(c.ID) }

func (CreateRegion) regionCommand() {}
func (UpdateRegion) regionCommand() {}
func (DeleteRegion) regionCommand() {}

// RegionDecider returns the decider of the region aggregate.
func RegionDecider() Decider[Region, RegionCommand] {
	return Decider[Region, RegionCommand]{
		Initial: func() Region { return Region{} },
		Evolve:  evolveRegion,
		Decide:  decideRegion,
	}
}

func evolveRegion(s Region, e Event) Region {
	switch e := e.(type) {
	case RegionCreated:
		return Region{ID: e.RegionID, Name: e.Name}
	case RegionRenamed:
		s.Name = e.Name
	case RegionDeleted:
		s.Deleted = true
	}
	return s
}

func decideRegion(s Region, c RegionCommand, _ time.Time) ([]Event, error) {
	switch c := c.(type) {
	case CreateRegion:
		if err := regionRules.create(s.ID, c.ID, c.Name); err != nil {
			return nil, err
		}
		return []Event{RegionCreated{RegionID: c.ID, Name: c.Name}}, nil
	case UpdateRegion:
		name, err := regionRules.rename(s.ID, s.Exists(), s.Name, c.ID, c.Name)
		if err != nil || !name.Present {
			return nil, err
		}
		return []Event{RegionRenamed{RegionID: s.ID, Name: name.Value}}, nil
	case DeleteRegion:
		if err := checkTarget(regionRules.what, s.ID, s.Exists(), c.ID); err != nil {
			return nil, err
		}
		return []Event{RegionDeleted{RegionID: s.ID}}, nil
	}
	return nil, errors.New("domain: unknown region command")
}
