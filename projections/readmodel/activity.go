package readmodel

import "tvsm/domain"

// applyDevice applies an event of a device's own stream (device-{id}) to
// the device's record: its logins and its websocket connections and
// disconnections give first_online, last_online and ipaddr, its logins
// also last_fw_ver and operation_system. Events of devices that are not
// bound (any more) are passed over. Applying an event twice changes
// nothing, and an event older than the device's last activity does not
// overwrite the address or firmware that newer one gave.
func (s *state) applyDevice(c *change) {
	var address, firmware, os string
	switch e := c.event.(type) {
	case domain.DeviceLoggedIn:
		address, firmware, os = e.Address, e.Firmware, e.OS
	case domain.DeviceConnected:
		address = e.Address
	case domain.DeviceDisconnected:
	default:
		return
	}
	r, ok := s.devRef(c.id)
	if !ok || c.at <= 0 {
		return
	}
	d := r.dev()
	act := d.activity()
	at := stampOf(c.at)
	newest := at >= act.last
	if act.first == 0 || at < act.first {
		act.first = at
	}
	act.last = max(act.last, at)
	if newest {
		setText(&act.address, address)
		setText(&act.firmware, firmware)
		setText(&act.os, os)
	}
	next := devOf(d.toDomain(), d.created, act)
	if next.text == d.text {
		if next.first == d.first && next.last == d.last {
			return
		}
		next.text = d.text // the same text: share it, and the index keys in it
	}
	old := r.a
	rec := *old
	rec.devs = append([]dev(nil), old.devs...)
	rec.devs[r.i] = next
	s.putAccount(old, &rec)
}

// setText sets *p to v unless v is empty (not reported).
func setText(p **string, v string) {
	if v != "" {
		*p = &v
	}
}
