package domain

// Region event type names.
const (
	RegionCreatedType = "RegionCreated.v1"
	RegionRenamedType = "RegionRenamed.v1"
	RegionDeletedType = "RegionDeleted.v1"
)

// RegionCreated records a new region.
type RegionCreated struct {
	RegionID int64  `json:"region_id"`
	Name     string `json:"name"`
}

// RegionRenamed records a region's new name.
type RegionRenamed struct {
	RegionID int64  `json:"region_id"`
	Name     string `json:"name"`
}

// RegionDeleted records that a region was deleted. Its id is never reused.
type RegionDeleted struct {
	RegionID int64 `json:"region_id"`
}

// EventType implements Event.
func (RegionCreated) EventType() string { return RegionCreatedType }

// EventType implements Event.
func (RegionRenamed) EventType() string { return RegionRenamedType }

// EventType implements Event.
func (RegionDeleted) EventType() string { return RegionDeletedType }

func registerRegionEvents(r *Registry) {
	r.Register(RegionCreatedType, func() Event { return new(RegionCreated) })
	r.Register(RegionRenamedType, func() Event { return new(RegionRenamed) })
	r.Register(RegionDeletedType, func() Event { return new(RegionDeleted) })
}
