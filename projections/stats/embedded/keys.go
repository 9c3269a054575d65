package embedded

import (
	"encoding/binary"
	"fmt"

	"tvsm/projections/stats"
)

// Key layout. Integers are big-endian with the sign bit flipped, so keys
// sort as the numbers do; every key starts with its kind byte.
//
//	kindSub     provider day tariff              → version, enabled, devices, active, disabled, with devices
//	kindDay     provider day position index      → account, device, channel, live, seconds, class
//	kindAccount provider account day position index → channel, live, seconds
//	kindSeen    provider class                   → day
//	kindMeta    name                             → value
//
// A viewing fact is kept twice: by day (device totals, active accounts)
// and by account (per-account totals, streamed in account order without
// holding a range in memory).
const (
	kindSub     byte = 's'
	kindDay     byte = 'v'
	kindAccount byte = 'a'
	kindSeen    byte = 'c'
	kindMeta    byte = 'm'
)

const (
	intLen = 8
	dayLen = 4
)

func putInt(b []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(v)^(1<<63))
}

func getInt(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)) }

func putDay(b []byte, d stats.Day) []byte {
	return binary.BigEndian.AppendUint32(b, uint32(d)^(1<<31))
}

func getDay(b []byte) stats.Day { return stats.Day(int32(binary.BigEndian.Uint32(b) ^ (1 << 31))) }

func subKey(r *stats.SubscriptionDay) []byte {
	k := make([]byte, 0, 1+intLen+dayLen+intLen)
	k = append(k, kindSub)
	k = putInt(k, r.Provider)
	k = putDay(k, r.Day)
	return putInt(k, r.Tariff)
}

func dayKey(f *stats.ViewingFact) []byte {
	k := make([]byte, 0, 1+intLen+dayLen+intLen+4)
	k = append(k, kindDay)
	k = putInt(k, f.Provider)
	k = putDay(k, f.Day)
	k = binary.BigEndian.AppendUint64(k, f.Position)
	return binary.BigEndian.AppendUint32(k, uint32(f.Index))
}

func accountKey(f *stats.ViewingFact) []byte {
	k := make([]byte, 0, 1+2*intLen+dayLen+intLen+4)
	k = append(k, kindAccount)
	k = putInt(k, f.Provider)
	k = putInt(k, f.Account)
	k = putDay(k, f.Day)
	k = binary.BigEndian.AppendUint64(k, f.Position)
	return binary.BigEndian.AppendUint32(k, uint32(f.Index))
}

func seenKey(provider int64, class string) []byte {
	k := make([]byte, 0, 1+intLen+len(class))
	k = append(k, kindSeen)
	k = putInt(k, provider)
	return append(k, class...)
}

func metaKey(name string) []byte { return append([]byte{kindMeta}, name...) }

// encodeSub and decodeSub: the value of a subscription row.
func encodeSub(r *stats.SubscriptionDay) []byte {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+5*binary.MaxVarintLen64), r.Version)
	for _, n := range []int64{r.Enabled, r.EnabledDevices, r.Active, r.Disabled, r.EnabledWithDevices} {
		v = binary.AppendVarint(v, n)
	}
	return v
}

func decodeSub(key, val []byte) (stats.SubscriptionDay, error) {
	if len(key) != 1+intLen+dayLen+intLen || len(val) < 8 {
		return stats.SubscriptionDay{}, fmt.Errorf("embedded stats: bad subscription row %x", key)
	}
	r := stats.SubscriptionDay{
		Provider: getInt(key[1:]),
		Day:      getDay(key[1+intLen:]),
		Tariff:   getInt(key[1+intLen+dayLen:]),
		Version:  binary.BigEndian.Uint64(val),
	}
	d := varints{b: val[8:]}
	r.Enabled, r.EnabledDevices, r.Active, r.Disabled, r.EnabledWithDevices = d.next(), d.next(), d.next(), d.next(), d.next()
	return r, d.err
}

// encodeDayFact and encodeAccountFact: the values of a fact's two keys.
func encodeDayFact(f *stats.ViewingFact) []byte {
	v := make([]byte, 0, 4*binary.MaxVarintLen64+1+len(f.Class))
	v = binary.AppendVarint(v, f.Account)
	v = binary.AppendVarint(v, f.Device)
	v = appendViewing(v, f)
	return append(v, f.Class...)
}

func encodeAccountFact(f *stats.ViewingFact) []byte {
	return appendViewing(make([]byte, 0, 2*binary.MaxVarintLen64+1), f)
}

func appendViewing(v []byte, f *stats.ViewingFact) []byte {
	v = binary.AppendVarint(v, f.Channel)
	v = append(v, boolByte(f.Live))
	return binary.AppendVarint(v, f.Seconds)
}

// dayFact is what device totals and active accounts read of a fact.
type dayFact struct {
	provider, account, device, channel, seconds int64
	live                                        bool
	class                                       string
}

func decodeDayFact(key, val []byte) (dayFact, error) {
	d := varints{b: val}
	f := dayFact{provider: getInt(key[1:]), account: d.next(), device: d.next()}
	f.channel, f.live, f.seconds = d.viewing()
	f.class = string(d.b)
	return f, d.err
}

// accountFact is what per-account totals read of a fact.
type accountFact struct {
	provider, account, channel, seconds int64
	live                                bool
}

func decodeAccountFact(key, val []byte) (accountFact, error) {
	d := varints{b: val}
	f := accountFact{provider: getInt(key[1:]), account: getInt(key[1+intLen:])}
	f.channel, f.live, f.seconds = d.viewing()
	return f, d.err
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// varints decodes a value field by field, remembering the first error.
type varints struct {
	b   []byte
	err error
}

func (d *varints) next() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = fmt.Errorf("embedded stats: corrupt value")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *varints) viewing() (channel int64, live bool, seconds int64) {
	channel = d.next()
	if d.err == nil && len(d.b) == 0 {
		d.err = fmt.Errorf("embedded stats: corrupt value")
	}
	if d.err != nil {
		return 0, false, 0
	}
	live = d.b[0] == 1
	d.b = d.b[1:]
	return channel, live, d.next()
}
