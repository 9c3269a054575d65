package domain

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// DeviceClass is the kind of a client device, as the Statistics API
// reports it (stb, tv, phone, tablet, web).
type DeviceClass string

// The device classes.
const (
	DeviceSTB    DeviceClass = "stb"
	DeviceTV     DeviceClass = "tv"
	DevicePhone  DeviceClass = "phone"
	DeviceTablet DeviceClass = "tablet"
	DeviceWeb    DeviceClass = "web"
)

// DeviceClasses lists every device class, in the order statistics show them.
func DeviceClasses() []DeviceClass {
	return []DeviceClass{DeviceSTB, DeviceTV, DevicePhone, DeviceTablet, DeviceWeb}
}

// ParseDeviceClass returns the class named s, ignoring ASCII case.
func ParseDeviceClass(s string) (DeviceClass, error) {
	if c := DeviceClass(strings.ToLower(s)); c.known() {
		return c.intern(), nil
	}
	if s == "" {
		return "", errors.New(problemRequired)
	}
	return "", errors.New("must be one of stb, tv, phone, tablet, web")
}

// intern returns the package constant equal to c, so a million decoded
// devices share five strings; an unknown c is returned as it is.
func (c DeviceClass) intern() DeviceClass {
	switch c {
	case DeviceSTB:
		return DeviceSTB
	case DeviceTV:
		return DeviceTV
	case DevicePhone:
		return DevicePhone
	case DeviceTablet:
		return DeviceTablet
	case DeviceWeb:
		return DeviceWeb
	}
	return c
}

// known reports whether c is one of the device classes.
func (c DeviceClass) known() bool { return slices.Contains(DeviceClasses(), c) }

// Device is a client device bound to an account.
type Device struct {
	ID       int64
	UniqueID string // the device's own identifier (serial, MAC, app install id)
	Class    DeviceClass
	Model    string
}

// Limits of device fields.
const (
	MaxDeviceUniqueIDLen = 128
	MaxDeviceModelLen    = 128
)

var (
	deviceUniqueIDRule = textRule{max: MaxDeviceUniqueIDLen, required: true, trimmed: true}
	deviceModelRule    = textRule{max: MaxDeviceModelLen}
)

// Device returns the bound device with the given id.
func (a Account) Device(id int64) (Device, bool) {
	i := a.deviceIndex(id)
	if i < 0 {
		return Device{}, false
	}
	return a.Devices[i], true
}

// DeviceByUniqueID returns the bound device with the given unique id. After
// a BindDevice that emitted nothing, it gives the id of the device already
// bound.
func (a Account) DeviceByUniqueID(uniqueID string) (Device, bool) {
	i := slices.IndexFunc(a.Devices, func(d Device) bool { return d.UniqueID == uniqueID })
	if i < 0 {
		return Device{}, false
	}
	return a.Devices[i], true
}

func (a Account) deviceIndex(id int64) int {
	return slices.IndexFunc(a.Devices, func(d Device) bool { return d.ID == id })
}

// DeviceLimitError is the error of a bind refused by the device limit. It
// lists the devices bound, so the client can offer to unbind one.
// errors.Is(err, ErrDeviceLimit) holds.
type DeviceLimitError struct {
	AccountID int64
	Limit     int
	Bound     []Device
}

// Error implements error.
func (e *DeviceLimitError) Error() string {
	return fmt.Sprintf("account %d: %v: %d of %d devices bound", e.AccountID, ErrDeviceLimit, len(e.Bound), e.Limit)
}

// Unwrap returns ErrDeviceLimit.
func (e *DeviceLimitError) Unwrap() error { return ErrDeviceLimit }

// BindDevice binds a device to the account. The application allocates
// DeviceID and passes the provider's devices_per_account_limit in
// ProviderLimit (nil: unlimited); the account's own limit, when set, wins.
// Binding a UniqueID that is already bound emits nothing and is not an
// error: look the device up with Account.DeviceByUniqueID. Whether the
// unique id is bound to another account is checked outside the domain.
type BindDevice struct {
	AccountID     int64
	DeviceID      int64
	UniqueID      string
	Class         DeviceClass
	Model         string
	ProviderLimit *int
}

// UnbindDevice removes a device from the account.
type UnbindDevice struct {
	AccountID int64
	DeviceID  int64
}

// Stream implements AccountCommand.
func (c BindDevice) Stream() string { return AccountStream(c.AccountID) }

// Stream implements AccountCommand.
func (c UnbindDevice) Stream() string { return AccountStream(c.AccountID) }

func (BindDevice) accountCommand()   {}
func (UnbindDevice) accountCommand() {}

func bindDevice(s Account, c BindDevice) ([]Event, error) {
	var p problems
	p.add("id", checkID(c.DeviceID))
	p.add("unique_id", deviceUniqueIDRule.check(c.UniqueID))
	class, err := ParseDeviceClass(string(c.Class))
	p.addErr("class", err)
	p.add("model", deviceModelRule.check(c.Model))
	if err := p.err(); err != nil {
		return nil, err
	}
	if _, ok := s.DeviceByUniqueID(c.UniqueID); ok {
		return nil, nil // re-login of a bound device
	}
	if _, ok := s.Device(c.DeviceID); ok {
		return nil, alreadyExists("device", c.DeviceID)
	}
	if limit := s.DeviceLimit(c.ProviderLimit); limit != nil && len(s.Devices) >= *limit {
		return nil, &DeviceLimitError{AccountID: s.ID, Limit: *limit, Bound: slices.Clone(s.Devices)}
	}
	return []Event{DeviceBound{AccountID: s.ID, DeviceID: c.DeviceID, UniqueID: c.UniqueID, Class: class, Model: c.Model}}, nil
}

func unbindDevice(s Account, c UnbindDevice) ([]Event, error) {
	d, ok := s.Device(c.DeviceID)
	if !ok {
		return nil, notFound("device", c.DeviceID)
	}
	return []Event{DeviceUnbound{AccountID: s.ID, DeviceID: d.ID, UniqueID: d.UniqueID}}, nil
}
