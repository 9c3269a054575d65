package domain

// Category event type names.
const (
	CategoryCreatedType = "CategoryCreated.v1"
	CategoryRenamedType = "CategoryRenamed.v1"
	CategoryDeletedType = "CategoryDeleted.v1"
)

// CategoryCreated records a new channel category.
type CategoryCreated struct {
	CategoryID int64  `json:"category_id"`
	Name       string `json:"name"`
}

// CategoryRenamed records a category's new name.
type CategoryRenamed struct {
	CategoryID int64  `json:"category_id"`
	Name       string `json:"name"`
}

// CategoryDeleted records that a category was deleted. Its id is never
// reused.
type CategoryDeleted struct {
	CategoryID int64 `json:"category_id"`
}

// EventType implements Event.
func (CategoryCreated) EventType() string { return CategoryCreatedType }

// EventType implements Event.
func (CategoryRenamed) EventType() string { return CategoryRenamedType }

// EventType implements Event.
func (CategoryDeleted) EventType() string { return CategoryDeletedType }

func registerCategoryEvents(r *Registry) {
	r.Register(CategoryCreatedType, func() Event { return new(CategoryCreated) })
	r.Register(CategoryRenamedType, func() Event { return new(CategoryRenamed) })
	r.Register(CategoryDeletedType, func() Event { return new(CategoryDeleted) })
}
