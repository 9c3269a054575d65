package readmodel

import (
	"math"
	"net/netip"
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
// Layout (about 130 bytes plus one allocation for all strings, one for the
// subscriptions and one for the devices): the seven text fields live in
// one string, each preceded by its length as a uvarint; null fields are
// empty there and marked in flags.
type account struct {
	id       int64
	provider int64
	region   int64  // region_tag; 0: null
	rev      uint64 // revision of the last event of account-{id} applied
	created  stamp  // AccountCreated's occurred-at
	updated  stamp  // the last event of account-{id} applied
	limit    int32  // devices_per_account_limit, when flagLimit is set
	flags    uint16
	data     string // packed text fields, see field
	subs     []sub  // in the order added
	devs     []dev  // in the order bound
}

// stamp is a time in unix seconds, from 1970 to 2106: the times a record
// keeps are when the server saw something happen, and 32 bits of them
// save a few hundred megabytes at a million accounts.
type stamp uint32

// stampOf returns unix seconds sec as a stamp, clamped to its range.
func stampOf(sec int64) stamp { return stamp(min(max(sec, 0), math.MaxUint32)) }

// Unix returns the stamp in unix seconds.
func (t stamp) Unix() int64 { return int64(t) }

// Text fields of an account, in their order in account.data.
const (
	fLogin = iota
	fPinMD5
	fFullname
	fRemoteCustomField
	fContractInfo
	fMainAddress
	fAccountDesc
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

// field returns text field f (fLogin...fAccountDesc); "" when null.
func (a *account) field(f int) string { return packedField(a.data, f) }

// packedField returns field f of a string packFields wrote.
func packedField(s string, f int) string {
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

// pin returns pin_md5 as the domain has it (lowercase hex).
func (a *account) pin() string { return unpackHex(a.field(fPinMD5)) }

// packHex returns the bytes of a digest in lowercase hex (pin_md5, as the
// domain stores it): 16 bytes instead of 32. Other text is kept as it is;
// a zero byte in front marks the packed form, which no text has.
func packHex(s string) string {
	if len(s) == 0 || len(s)%2 != 0 {
		return s
	}
	b := make([]byte, 1, 1+len(s)/2)
	for i := 0; i < len(s); i += 2 {
		hi, lo := unhex(s[i]), unhex(s[i+1])
		if hi < 0 || lo < 0 {
			return s
		}
		b = append(b, byte(hi<<4|lo))
	}
	return string(b)
}

func unpackHex(s string) string {
	if len(s) == 0 || s[0] != 0 {
		return s
	}
	out := make([]byte, 0, 2*(len(s)-1))
	for i := 1; i < len(s); i++ {
		out = append(out, hexDigits[s[i]>>4], hexDigits[s[i]&0xf])
	}
	return string(out)
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
func packFields(fields *[numFields]string) string { return pack(fields[:]) }

// pack writes fields as one string, each preceded by its length as a
// uvarint.
func pack(fields []string) string {
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
	device          int64 // the device a device subscription is for; 0: the account's own
	startNs, stopNs int32 // stopNs < 0: open-ended
	timeShift       int32 // time_shift_depth; < 0: null
}

func (s sub) open() bool { return s.stopNs < 0 }

// toDomain returns the subscription as the domain has it.
func (s sub) toDomain() domain.Subscription {
	d := domain.Subscription{ID: s.id, Tariff: s.tariff, Start: time.Unix(s.start, int64(s.startNs)).UTC(), Device: s.device}
	if !s.open() {
		d.Stop = time.Unix(s.stop, int64(s.stopNs)).UTC()
	}
	if s.timeShift >= 0 {
		n := int(s.timeShift)
		d.TimeShiftDepth = &n
	}
	return d
}

// subOf returns the record form of a domain subscription.
func subOf(d domain.Subscription) sub {
	s := sub{id: d.ID, tariff: d.Tariff, start: d.Start.Unix(), startNs: int32(d.Start.Nanosecond()), stopNs: -1,
		device: d.Device, timeShift: -1}
	if !d.Open() {
		s.stop, s.stopNs = d.Stop.Unix(), int32(d.Stop.Nanosecond())
	}
	if d.TimeShiftDepth != nil {
		s.timeShift = int32(min(max(*d.TimeShiftDepth, 0), domain.MaxTimeShiftDepth))
	}
	return s
}

// dev is a device inside an account record: what the account's stream
// says of it (bound with, set by the provider) and what its own stream
// says (logins and connections: first and last online, address, firmware,
// operating system). Its text fields are packed into one string like the
// account's (see devField); null fields are empty there and marked in
// flags.
type dev struct {
	id          int64
	deviceType  int64 // 0: null
	text        string
	created     stamp // DeviceBound's occurred-at
	first, last stamp // its first and last login or connection; 0: never
	class       uint8 // index in deviceClasses; classUnknown: the class is text field dClass
	flags       uint8 // devUseNAT, devNotNull << (field - dMAC)
}

// Text fields of a device, in their order in dev.text.
const (
	dUniqueID = iota
	dModel
	dClass // only for a class deviceClasses does not hold
	dMAC
	dRemoteCustomField
	dComment
	dUdpxyAddr
	dAddress // ipaddr: of the last login or connection
	dFirmware
	dOS
	numDevFields
)

// Bits of dev.flags.
const (
	devUseNAT = 1 << iota
	// devNotNull << (field - dMAC): that nullable text field is set.
	devNotNull
)

// deviceClasses are the classes a dev stores as a number.
var deviceClasses = domain.DeviceClasses()

const classUnknown = 0xff

// field returns text field f as stored: the MAC and the address in their
// compact form (see packMAC, packAddress); value renders them.
func (d *dev) field(f int) string { return packedField(d.text, f) }

// value returns text field f as the API shows it; "" when null.
func (d *dev) value(f int) string {
	switch f {
	case dMAC:
		return unpackMAC(d.field(f))
	case dAddress:
		return unpackAddress(d.field(f))
	}
	return d.field(f)
}

// fieldPtr returns nullable text field f as a fresh pointer, nil when null.
func (d *dev) fieldPtr(f int) *string {
	if d.flags&(devNotNull<<(f-dMAC)) == 0 {
		return nil
	}
	v := d.value(f)
	return &v
}

// The MAC (six bytes, stored as 17 characters of text by the domain) and
// the client address (four or sixteen bytes) are kept as bytes: 30
// bytes less per device.

// packMAC returns the six bytes of a MAC in the domain's stored form
// (domain.NormalizeMAC); any other text is kept as it is (it is never six
// bytes long).
func packMAC(s string) string {
	var b [6]byte
	if !parseMAC(s, &b) {
		return s
	}
	return string(b[:])
}

// parseMAC reads "xx:xx:xx:xx:xx:xx" in lowercase hex into b.
func parseMAC(s string, b *[6]byte) bool {
	if len(s) != 17 {
		return false
	}
	for i := range b {
		hi, lo := unhex(s[3*i]), unhex(s[3*i+1])
		if hi < 0 || lo < 0 || i < 5 && s[3*i+2] != ':' {
			return false
		}
		b[i] = byte(hi<<4 | lo)
	}
	return true
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c - 'a' + 10)
	}
	return -1
}

func unpackMAC(s string) string {
	if len(s) != 6 {
		return s
	}
	out := make([]byte, 0, 17)
	for i := 0; i < 6; i++ {
		if i > 0 {
			out = append(out, ':')
		}
		out = append(out, hexDigits[s[i]>>4], hexDigits[s[i]&0xf])
	}
	return string(out)
}

const hexDigits = "0123456789abcdef"

// sameMAC reports whether stored (packMAC's form) is the MAC text s,
// without allocating.
func sameMAC(stored, s string) bool {
	var b [6]byte
	if len(stored) == 6 && parseMAC(s, &b) {
		return string(b[:]) == stored
	}
	return stored == s
}

// packAddress returns an IP address as a zero byte and its bytes; other
// text is kept as it is (text never starts with a zero byte).
func packAddress(s string) string {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" || a.String() != s {
		return s
	}
	b := a.AsSlice()
	return "\x00" + string(b)
}

func unpackAddress(s string) string {
	if len(s) == 0 || s[0] != 0 {
		return s
	}
	a, ok := netip.AddrFromSlice([]byte(s[1:]))
	if !ok {
		return ""
	}
	return a.String()
}

func (d *dev) uniqueID() string { return d.field(dUniqueID) }
func (d *dev) model() string    { return d.field(dModel) }

func (d *dev) deviceClass() domain.DeviceClass {
	if int(d.class) < len(deviceClasses) {
		return deviceClasses[d.class]
	}
	return domain.DeviceClass(d.field(dClass))
}

// toDomain returns the device as the domain has it.
func (d *dev) toDomain() domain.Device {
	v := domain.Device{ID: d.id, UniqueID: d.uniqueID(), Class: d.deviceClass(), Model: d.model(),
		DeviceFields: domain.DeviceFields{
			MAC: d.fieldPtr(dMAC), RemoteCustomField: d.fieldPtr(dRemoteCustomField), Comment: d.fieldPtr(dComment),
			UseNAT: d.flags&devUseNAT != 0, UdpxyAddr: d.fieldPtr(dUdpxyAddr),
		}}
	if d.deviceType != 0 {
		t := d.deviceType
		v.DeviceType = &t
	}
	return v
}

// activity is what a device's own stream says of it.
type activity struct {
	first, last           stamp
	address, firmware, os *string
}

// activity returns the device's activity fields.
func (d *dev) activity() activity {
	return activity{first: d.first, last: d.last,
		address: d.fieldPtr(dAddress), firmware: d.fieldPtr(dFirmware), os: d.fieldPtr(dOS)}
}

// devOf returns the record form of domain device d, bound at created,
// with activity act. Texts longer than the domain allows are kept whole:
// lengths are uvarints.
func devOf(d domain.Device, created stamp, act activity) dev {
	r := dev{id: d.ID, created: created, first: act.first, last: act.last, class: classUnknown}
	for i, c := range deviceClasses {
		if c == d.Class {
			r.class = uint8(i)
		}
	}
	var fields [numDevFields]string
	fields[dUniqueID], fields[dModel] = d.UniqueID, d.Model
	if r.class == classUnknown {
		fields[dClass] = string(d.Class)
	}
	for k, p := range [...]*string{d.MAC, d.RemoteCustomField, d.Comment, d.UdpxyAddr, act.address, act.firmware, act.os} {
		if p != nil {
			fields[dMAC+k] = *p
			r.flags |= devNotNull << k
		}
	}
	fields[dMAC] = packMAC(fields[dMAC])
	fields[dAddress] = packAddress(fields[dAddress])
	if d.UseNAT {
		r.flags |= devUseNAT
	}
	if d.DeviceType != nil {
		r.deviceType = *d.DeviceType
	}
	r.text = pack(fields[:])
	return r
}
