package domain

import (
	"errors"
	"time"
)

// DeviceType is a kind of device the operator supports ("tvip_s605",
// "android_tv"), by name. Device types belong to no provider. Its id is
// allocated outside the domain. The zero DeviceType does not exist yet.
type DeviceType struct {
	ID      int64
	Name    string // the wire's device_type
	Deleted bool
}

// Exists reports whether the device type was created and not deleted.
func (d DeviceType) Exists() bool { return d.ID != 0 && !d.Deleted }

// MaxDeviceTypeLen is the maximum length of a device type's name.
const MaxDeviceTypeLen = 100

var deviceTypeRules = namedRules{what: "device type", field: "device_type",
	rule: textRule{max: MaxDeviceTypeLen, required: true, trimmed: true}}

// DeviceTypeCommand is a command on a device type: CreateDeviceType,
// UpdateDeviceType or DeleteDeviceType.
type DeviceTypeCommand interface {
	Stream() string
	deviceTypeCommand()
}

// CreateDeviceType creates device type ID.
type CreateDeviceType struct {
	ID   int64
	Name string
}

// UpdateDeviceType changes the fields present in it (only the name).
type UpdateDeviceType struct {
	ID   int64
	Name Optional[string]
}

// DeleteDeviceType deletes device type ID.
type DeleteDeviceType struct{ ID int64 }

// Stream implements DeviceTypeCommand.
func (c CreateDeviceType) Stream() string { return DeviceTypeStream(c.ID) }

// Stream implements DeviceTypeCommand.
func (c UpdateDeviceType) Stream() string { return DeviceTypeStream(c.ID) }

// Stream implements DeviceTypeCommand.
func (c DeleteDeviceType) Stream() string { return DeviceTypeStream(c.ID) }

func (CreateDeviceType) deviceTypeCommand() {}
func (UpdateDeviceType) deviceTypeCommand() {}
func (DeleteDeviceType) deviceTypeCommand() {}

// DeviceTypeDecider returns the decider of the device type aggregate.
func DeviceTypeDecider() Decider[DeviceType, DeviceTypeCommand] {
	return Decider[DeviceType, DeviceTypeCommand]{
		Initial: func() DeviceType { return DeviceType{} },
		Evolve:  evolveDeviceType,
		Decide:  decideDeviceType,
	}
}

func evolveDeviceType(s DeviceType, e Event) DeviceType {
	switch e := e.(type) {
	case DeviceTypeCreated:
		return DeviceType{ID: e.DeviceTypeID, Name: e.Name}
	case DeviceTypeRenamed:
		s.Name = e.Name
	case DeviceTypeDeleted:
		s.Deleted = true
	}
	return s
}

func decideDeviceType(s DeviceType, c DeviceTypeCommand, _ time.Time) ([]Event, error) {
	switch c := c.(type) {
	case CreateDeviceType:
		if err := deviceTypeRules.create(s.ID, c.ID, c.Name); err != nil {
			return nil, err
		}
		return []Event{DeviceTypeCreated{DeviceTypeID: c.ID, Name: c.Name}}, nil
	case UpdateDeviceType:
		name, err := deviceTypeRules.rename(s.ID, s.Exists(), s.Name, c.ID, c.Name)
		if err != nil || !name.Present {
			return nil, err
		}
		return []Event{DeviceTypeRenamed{DeviceTypeID: s.ID, Name: name.Value}}, nil
	case DeleteDeviceType:
		if err := checkTarget(deviceTypeRules.what, s.ID, s.Exists(), c.ID); err != nil {
			return nil, err
		}
		return []Event{DeviceTypeDeleted{DeviceTypeID: s.ID}}, nil
	}
	return nil, errors.New("domain: unknown device type command")
}
