package domain

// Device type event type names.
const (
	DeviceTypeCreatedType = "DeviceTypeCreated.v1"
	DeviceTypeRenamedType = "DeviceTypeRenamed.v1"
	DeviceTypeDeletedType = "DeviceTypeDeleted.v1"
)

// DeviceTypeCreated records a new device type.
type DeviceTypeCreated struct {
	DeviceTypeID int64  `json:"device_type_id"`
	Name         string `json:"name"`
}

// DeviceTypeRenamed records a device type's new name.
type DeviceTypeRenamed struct {
	DeviceTypeID int64  `json:"device_type_id"`
	Name         string `json:"name"`
}

// DeviceTypeDeleted records that a device type was deleted. Its id is
// never reused.
type DeviceTypeDeleted struct {
	DeviceTypeID int64 `json:"device_type_id"`
}

// EventType implements Event.
func (DeviceTypeCreated) EventType() string { return DeviceTypeCreatedType }

// EventType implements Event.
func (DeviceTypeRenamed) EventType() string { return DeviceTypeRenamedType }

// EventType implements Event.
func (DeviceTypeDeleted) EventType() string { return DeviceTypeDeletedType }

func registerDeviceTypeEvents(r *Registry) {
	r.Register(DeviceTypeCreatedType, func() Event { return new(DeviceTypeCreated) })
	r.Register(DeviceTypeRenamedType, func() Event { return new(DeviceTypeRenamed) })
	r.Register(DeviceTypeDeletedType, func() Event { return new(DeviceTypeDeleted) })
}
