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

// Device is a client device bound to an account: what it said of itself
// when it was bound (UniqueID, Class, Model) and what the provider set
// (DeviceFields).
type Device struct {
	ID       int64
	UniqueID string // the device's own identifier (serial, MAC, app install id)
	Class    DeviceClass
	Model    string
	DeviceFields
}

// DeviceFields are the fields of a device that its provider sets (TVIP's
// device object); nil is null.
type DeviceFields struct {
	MAC               *string // six bytes in lowercase hex, colon-separated (NormalizeMAC)
	RemoteCustomField *string
	Comment           *string
	UseNAT            bool
	UdpxyAddr         *string // the subscriber's udpxy proxy, host:port or URL
	DeviceType        *int64  // a device type's id
}

// Limits of device fields.
const (
	MaxDeviceUniqueIDLen = 128
	MaxDeviceModelLen    = 128
	MaxDeviceCommentLen  = 1000
	MaxUdpxyAddrLen      = 255
)

var (
	deviceUniqueIDRule = textRule{max: MaxDeviceUniqueIDLen, required: true, trimmed: true}
	deviceModelRule    = textRule{max: MaxDeviceModelLen}
	deviceCommentRule  = textRule{max: MaxDeviceCommentLen, multiline: true}
	udpxyAddrRule      = textRule{max: MaxUdpxyAddrLen, trimmed: true}
)

// NormalizeMAC returns a MAC address (six bytes as 12 hex digits, grouped
// by two with colons or dashes, by four with dots, or not at all) in its
// stored form: lowercase, colon-separated ("00:1a:79:0a:bb:cc").
func NormalizeMAC(s string) (string, error) {
	groups, sep := []string{s}, byte(0)
	if i := strings.IndexAny(s, ":-."); i >= 0 {
		sep = s[i]
		groups = strings.Split(s, s[i:i+1])
	}
	switch {
	case len(groups) == 1, len(groups) == 6 && sep != '.', len(groups) == 3 && sep == '.':
	default:
		return "", errMAC
	}
	width := 12 / len(groups)
	digits := make([]byte, 0, 12)
	for _, g := range groups {
		if len(g) != width {
			return "", errMAC
		}
		for i := 0; i < len(g); i++ {
			switch c := g[i]; {
			case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
				digits = append(digits, c)
			case c >= 'A' && c <= 'F':
				digits = append(digits, c+'a'-'A')
			default:
				return "", errMAC
			}
		}
	}
	out := make([]byte, 0, 17)
	for i := 0; i < 12; i += 2 {
		if i > 0 {
			out = append(out, ':')
		}
		out = append(out, digits[i], digits[i+1])
	}
	return string(out), nil
}

var errMAC = errors.New("must be a MAC address: 12 hex digits, such as 00:1A:79:0A:BB:CC")

// checkFields validates f and returns it with its MAC normalised.
func (f DeviceFields) check(p *problems) DeviceFields {
	if f.MAC != nil {
		mac, err := NormalizeMAC(*f.MAC)
		p.addErr("mac", err)
		f.MAC = &mac
	}
	p.add("remote_custom_field", remoteCustomFieldRule.checkPtr(f.RemoteCustomField))
	p.add("comment", deviceCommentRule.checkPtr(f.Comment))
	p.add("udpxy_addr", udpxyAddrRule.checkPtr(f.UdpxyAddr))
	p.add("device_type", checkRefPtr(f.DeviceType))
	return f
}

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
// DeviceID and passes in ProviderLimit the limit of accounts that set none
// (the provider's devices_per_account_limit, else the node's default; nil:
// unlimited); the account's own limit, when set, wins.
// Binding a UniqueID that is already bound emits nothing and is not an
// error: look the device up with Account.DeviceByUniqueID. Whether the
// unique id is bound to another account is checked outside the domain.
//
// A device a provider registers before it ever logs in (TVIP's "quick
// bind") is bound the same way, with the provider's DeviceFields.
type BindDevice struct {
	AccountID     int64
	DeviceID      int64
	UniqueID      string
	Class         DeviceClass
	Model         string
	Fields        DeviceFields
	ProviderLimit *int
}

// ChangeDevice changes the provider's fields of a bound device that are
// present in it. UniqueID may be present (sync jobs re-send whole records)
// but must equal the device's.
type ChangeDevice struct {
	AccountID         int64
	DeviceID          int64
	UniqueID          Optional[string]
	MAC               Optional[string]
	RemoteCustomField Optional[string]
	Comment           Optional[string]
	UseNAT            Optional[bool]
	UdpxyAddr         Optional[string]
	DeviceType        Optional[int64]
}

// UnbindDevice removes a device from the account, and with it the device's
// own subscriptions.
type UnbindDevice struct {
	AccountID int64
	DeviceID  int64
}

// Stream implements AccountCommand.
func (c BindDevice) Stream() string { return AccountStream(c.AccountID) }

// Stream implements AccountCommand.
func (c ChangeDevice) Stream() string { return AccountStream(c.AccountID) }

// Stream implements AccountCommand.
func (c UnbindDevice) Stream() string { return AccountStream(c.AccountID) }

func (BindDevice) accountCommand()   {}
func (ChangeDevice) accountCommand() {}
func (UnbindDevice) accountCommand() {}

func bindDevice(s Account, c BindDevice) ([]Event, error) {
	var p problems
	p.add("id", checkID(c.DeviceID))
	p.add("unique_id", deviceUniqueIDRule.check(c.UniqueID))
	class, err := ParseDeviceClass(string(c.Class))
	p.addErr("class", err)
	p.add("model", deviceModelRule.check(c.Model))
	fields := c.Fields.check(&p)
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
	return []Event{DeviceBound{AccountID: s.ID, DeviceID: c.DeviceID, UniqueID: c.UniqueID, Class: class, Model: c.Model,
		MAC: fields.MAC, RemoteCustomField: fields.RemoteCustomField, Comment: fields.Comment, UseNAT: fields.UseNAT,
		UdpxyAddr: fields.UdpxyAddr, DeviceType: fields.DeviceType}}, nil
}

func changeDevice(s Account, c ChangeDevice) ([]Event, error) {
	cur, ok := s.Device(c.DeviceID)
	if !ok {
		return nil, notFound("device", c.DeviceID)
	}
	var p problems
	if v, ok := c.UniqueID.Get(); c.UniqueID.Present && (!ok || v != cur.UniqueID) {
		p.add("unique_id", problemImmutable)
	}
	e := DeviceChanged{AccountID: s.ID, DeviceID: cur.ID}
	if v, ok := c.MAC.Get(); ok {
		mac, err := NormalizeMAC(v)
		p.addErr("mac", err)
		c.MAC = Some(mac)
	}
	e.MAC = patchNullable(&p, "mac", c.MAC, cur.MAC, nil)
	e.RemoteCustomField = patchNullable(&p, "remote_custom_field", c.RemoteCustomField, cur.RemoteCustomField, remoteCustomFieldRule.check)
	e.Comment = patchNullable(&p, "comment", c.Comment, cur.Comment, deviceCommentRule.check)
	e.UseNAT = patchValue(&p, "use_nat", c.UseNAT, cur.UseNAT, nil)
	e.UdpxyAddr = patchNullable(&p, "udpxy_addr", c.UdpxyAddr, cur.UdpxyAddr, udpxyAddrRule.check)
	e.DeviceType = patchNullable(&p, "device_type", c.DeviceType, cur.DeviceType, checkID)
	if err := p.err(); err != nil {
		return nil, err
	}
	if !e.changed() {
		return nil, nil
	}
	return []Event{e}, nil
}

// unbindDevice removes the device's own subscriptions first, each with its
// event, so that every reader of subscriptions (statistics among them)
// sees them end without knowing about devices.
func unbindDevice(s Account, c UnbindDevice) ([]Event, error) {
	d, ok := s.Device(c.DeviceID)
	if !ok {
		return nil, notFound("device", c.DeviceID)
	}
	var events []Event
	for _, sub := range s.Subscriptions {
		if sub.Device == d.ID {
			events = append(events, SubscriptionRemoved{AccountID: s.ID, SubscriptionID: sub.ID})
		}
	}
	return append(events, DeviceUnbound{AccountID: s.ID, DeviceID: d.ID, UniqueID: d.UniqueID}), nil
}
