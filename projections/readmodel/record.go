package readmodel

import (
	"strings"
	"time"

	"tvsm/domain"
)

// account is the compact in-memory record of a live account. Records are
// immutable once published: the applier builds a new record for every
// change and swaps it in under the write lock, so a reader may keep using a
// record it found after releasing the read lock. That is what lets lists
// stream without holding the lock.
//
// Layout (about 110 bytes plus one allocation for all strings, one for the
// subscriptions and one for the devices): the eight text fields live in
// one string, each preceded by its length as a uvarint; null fields are
// empty there and marked in flags.
type account struct {
	id       int64
	provider int64
	created  int64  // unix seconds of AccountCreated's occurred-at
	rev      uint64 // revision of the last event of account-{id} applied
	limit    int32  // devices_per_account_limit, when flagLimit is set
	flags    uint16
	data     string // packed text fields, see field
	subs     []sub  // in the order added
	devs     []dev  // in the order bound
}

// Text fields of an account, in their order in account.data.
const (
	fLogin = iota
	fPinMD5
	fFullname
	fRemoteCustomField
	fContractInfo
	fMainAddress
	fAccountDesc
	fRegionTag
	numFields
)

// Bits of account.flags.
const (
	flagEnabled = 1 << iota
	flagLimit   // devices_per_account_limit is set
	// flagNotNull << (field - fRemoteCustomField): that nullable text
	// field is set.
	flagNotNull
)

// nullable reports whether text field f can be null.
func nullable(f int) bool { return f >= fRemoteCustomField }

// field returns text field f (fLogin...fRegionTag); "" when null.
func (a *account) field(f int) string {
	s := a.data
	for {
		n, w := uvarintString(s)
		s = s[w:]
		if f == 0 {
			return s[:n]
		}
		s = s[n:]
		f--
	}
}

// fieldPtr returns nullable text field f as a fresh pointer, nil when null.
func (a *account) fieldPtr(f int) *string {
	if a.flags&(flagNotNull<<(f-fRemoteCustomField)) == 0 {
		return nil
	}
	v := a.field(f)
	return &v
}

func (a *account) login() string    { return a.field(fLogin) }
func (a *account) fullname() string { return a.field(fFullname) }
func (a *account) enabled() bool    { return a.flags&flagEnabled != 0 }

// uvarintString decodes a uvarint at the start of s, returning the value
// and its width. Records are built by this package, so s is well formed.
func uvarintString(s string) (n, width int) {
	var shift uint
	for i := 0; i < len(s); i++ {
		b := s[i]
		n |= int(b&0x7f) << shift
		if b < 0x80 {
			return n, i + 1
		}
		shift += 7
	}
	return 0, len(s)
}

// packFields returns the packed form of the text fields.
func packFields(fields *[numFields]string) string {
	size := 0
	for _, f := range fields {
		size += uvarintLen(uint64(len(f))) + len(f)
	}
	var b strings.Builder
	b.Grow(size)
	var tmp [10]byte
	for _, f := range fields {
		b.Write(appendUvarint(tmp[:0], uint64(len(f))))
		b.WriteString(f)
	}
	return b.String()
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func appendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// sub is a subscription inside an account record. Times are kept as unix
// seconds and nanoseconds, so any stored time survives exactly.
type sub struct {
	id, tariff      int64
	start, stop     int64 // unix seconds
	startNs, stopNs int32 // stopNs < 0: open-ended
}

func (s sub) open() bool { return s.stopNs < 0 }

// toDomain returns the subscription as the domain has it.
func (s sub) toDomain() domain.Subscription {
	d := domain.Subscription{ID: s.id, Tariff: s.tariff, Start: time.Unix(s.start, int64(s.startNs)).UTC()}
	if !s.open() {
		d.Stop = time.Unix(s.stop, int64(s.stopNs)).UTC()
	}
	return d
}

// subOf returns the record form of a domain subscription.
func subOf(d domain.Subscription) sub {
	s := sub{id: d.ID, tariff: d.Tariff, start: d.Start.Unix(), startNs: int32(d.Start.Nanosecond()), stopNs: -1}
	if !d.Open() {
		s.stop, s.stopNs = d.Stop.Unix(), int32(d.Stop.Nanosecond())
	}
	return s
}

// dev is a device inside an account record. Devices never change once
// bound, so records share them. text holds the unique id, then the model,
// then (only for a class this package does not know) the class.
type dev struct {
	id       int64
	created  int64 // unix seconds of DeviceBound's occurred-at
	text     string
	uidLen   uint16
	modelLen uint16
	class    uint8 // index in deviceClasses; classUnknown: the class ends text
}

// deviceClasses are the classes a dev stores as a number.
var deviceClasses = domain.DeviceClasses()

const classUnknown = 0xff

func (d *dev) uniqueID() string { return d.text[:d.uidLen] }
func (d *dev) model() string    { return d.text[d.uidLen : d.uidLen+d.modelLen] }

func (d *dev) deviceClass() domain.DeviceClass {
	if int(d.class) < len(deviceClasses) {
		return deviceClasses[d.class]
	}
	return domain.DeviceClass(d.text[d.uidLen+d.modelLen:])
}

// toDomain returns the device as the domain has it.
func (d *dev) toDomain() domain.Device {
	return domain.Device{ID: d.id, UniqueID: d.uniqueID(), Class: d.deviceClass(), Model: d.model()}
}

// devOf returns the record form of a new domain device, bound at created.
// Unique ids and models longer than 64 KiB (far beyond the domain's
// limits) are cut.
func devOf(d domain.Device, created int64) dev {
	uid, model := clip16(d.UniqueID), clip16(d.Model)
	r := dev{id: d.ID, created: created, uidLen: uint16(len(uid)), modelLen: uint16(len(model)), class: classUnknown}
	for i, c := range deviceClasses {
		if c == d.Class {
			r.class = uint8(i)
		}
	}
	text := uid + model
	if r.class == classUnknown {
		text += string(d.Class)
	}
	r.text = text
	return r
}

func clip16(s string) string {
	if len(s) > 0xffff {
		return s[:0xffff]
	}
	return s
}
