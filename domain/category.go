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

var (
	categoryNameRule  = textRule{max: MaxCategoryNameLen, required: true, trimmed: true}
	errCategoryTarget = errors.New("category command decided on another category's state")
)

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
		var p problems
		p.add("id", checkID(c.ID))
		p.add("name", categoryNameRule.check(c.Name))
		if err := p.err(); err != nil {
			return nil, err
		}
		if s.ID != 0 {
			return nil, alreadyExists("category", c.ID)
		}
		return []Event{CategoryCreated{CategoryID: c.ID, Name: c.Name}}, nil
	case UpdateCategory:
		if err := checkCategoryTarget(s, c.ID); err != nil {
			return nil, err
		}
		var p problems
		name := patchValue(&p, "name", c.Name, s.Name, categoryNameRule.check)
		if err := p.err(); err != nil {
			return nil, err
		}
		if v, ok := name.Get(); ok {
			return []Event{CategoryRenamed{CategoryID: s.ID, Name: v}}, nil
		}
		return nil, nil
	case DeleteCategory:
		if err := checkCategoryTarget(s, c.ID); err != nil {
			return nil, err
		}
		return []Event{CategoryDeleted{CategoryID: s.ID}}, nil
	}
	return nil, errors.New("domain: unknown category command")
}

// checkCategoryTarget returns ErrNotFound unless category id exists in s.
func checkCategoryTarget(s Category, id int64) error {
	switch {
	case !s.Exists():
		return notFound("category", id)
	case s.ID != id:
		return errCategoryTarget
	}
	return nil
}
