package domain

import (
	"errors"
	"time"
)

// Category is a channel category (news, sport, ...); channels list
// categories by id. Its id is allocated outside the domain. The zero
// Category does not exist yet.
type Category struct {
	ID      int64
	Name    string
	Deleted bool
}

// Exists reports whether the category was created and not deleted.
func (c Category) Exists() bool { return c.ID != 0 && !c.Deleted }

// MaxCategoryNameLen is the maximum length of a category name.
const MaxCategoryNameLen = 100

var categoryRules = namedRules{what: "category", field: "name",
	rule: textRule{max: MaxCategoryNameLen, required: true, trimmed: true}}

// CategoryCommand is a command on a category: CreateCategory,
// UpdateCategory or DeleteCategory.
type CategoryCommand interface {
	Stream() string
	categoryCommand()
}

// CreateCategory creates category ID.
type CreateCategory struct {
	ID   int64
	Name string
}

// UpdateCategory changes the fields present in it (only the name).
type UpdateCategory struct {
	ID   int64
	Name Optional[string]
}

// DeleteCategory deletes category ID. Channels keep the id in their lists;
// readers skip categories that no longer exist.
type DeleteCategory struct{ ID int64 }

// Stream implements CategoryCommand.
func (c CreateCategory) Stream() string { return CategoryStream(c.ID) }

// Stream implements CategoryCommand.
func (c UpdateCategory) Stream() string { return CategoryStream(c.ID) }

// Stream implements CategoryCommand.
func (c DeleteCategory) Stream() string { return CategoryStream(c.ID) }

func (CreateCategory) categoryCommand() {}
func (UpdateCategory) categoryCommand() {}
func (DeleteCategory) categoryCommand() {}

// CategoryDecider returns the decider of the category aggregate.
func CategoryDecider() Decider[Category, CategoryCommand] {
	return Decider[Category, CategoryCommand]{
		Initial: func() Category { return Category{} },
		Evolve:  evolveCategory,
		Decide:  decideCategory,
	}
}

func evolveCategory(s Category, e Event) Category {
	switch e := e.(type) {
	case CategoryCreated:
		return Category{ID: e.CategoryID, Name: e.Name}
	case CategoryRenamed:
		s.Name = e.Name
	case CategoryDeleted:
		s.Deleted = true
	}
	return s
}

func decideCategory(s Category, c CategoryCommand, _ time.Time) ([]Event, error) {
	switch c := c.(type) {
	case CreateCategory:
		if err := categoryRules.create(s.ID, c.ID, c.Name); err != nil {
			return nil, err
		}
		return []Event{CategoryCreated{CategoryID: c.ID, Name: c.Name}}, nil
	case UpdateCategory:
		name, err := categoryRules.rename(s.ID, s.Exists(), s.Name, c.ID, c.Name)
		if err != nil || !name.Present {
			return nil, err
		}
		return []Event{CategoryRenamed{CategoryID: s.ID, Name: name.Value}}, nil
	case DeleteCategory:
		if err := checkTarget(categoryRules.what, s.ID, s.Exists(), c.ID); err != nil {
			return nil, err
		}
		return []Event{CategoryDeleted{CategoryID: s.ID}}, nil
	}
	return nil, errors.New("domain: unknown category command")
}
