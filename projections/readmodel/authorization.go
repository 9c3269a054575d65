package readmodel

import (
	"time"

	"tvsm/domain"
)

// Device authorisation. A device token carries the read model's commit
// position when it was issued; the token is revoked when, after that
// position, the device stopped being bound to the token's account (unbind,
// account deleted: the binding check) or an `update` command targeted the
// device, its account or its provider (the drops below).
//
// Memory: a drop is kept per provider, account or device an `update`
// targeted, not per device a provider-wide one reaches, and is forgotten
// when its account or device goes. Nothing is kept for accounts that never
// received one.

// drops are the commit positions of the newest `update` command that
// targeted each provider, account and device.
type drops struct {
	providers, accounts, devices map[int64]uint64
}

func newDrops() drops {
	return drops{providers: make(map[int64]uint64), accounts: make(map[int64]uint64), devices: make(map[int64]uint64)}
}

// all returns the three maps, in snapshot order.
func (d drops) all() [3]map[int64]uint64 {
	return [3]map[int64]uint64{d.providers, d.accounts, d.devices}
}

// raise records a drop at pos for id in m, keeping the newest: applying an
// event twice changes nothing.
func raise(m map[int64]uint64, id int64, pos uint64) {
	if pos > m[id] {
		m[id] = pos
	}
}

// applyCommand records the authorisation drop of a send with an `update`
// command, at the send's position. Accounts and devices that are not live
// are skipped: no token of theirs can pass the binding check anyway.
func (s *state) applyCommand(c *change) {
	e, ok := c.event.(domain.CommandsIssued)
	if !ok {
		return
	}
	s.sends.add(e.SendID, e.Scope)
	if !dropsAuthorisation(e) {
		return
	}
	for _, id := range e.IDs {
		switch e.Recipients {
		case domain.RecipientProviders:
			raise(s.drops.providers, id, c.pos)
		case domain.RecipientAccounts:
			if s.account(id) != nil {
				raise(s.drops.accounts, id, c.pos)
			}
		case domain.RecipientDevices:
			if _, bound := s.devs[id]; bound {
				raise(s.drops.devices, id, c.pos)
			}
		}
	}
}

func dropsAuthorisation(e domain.CommandsIssued) bool {
	for _, cmd := range e.Commands {
		if cmd.Kind == domain.CommandUpdate {
			return true
		}
	}
	return false
}

// forgetDevice drops what is kept about a device that was unbound.
func (s *state) forgetDevice(id int64) {
	delete(s.drops.devices, id)
}

// AuthorizedDevice returns device when its authorisation, as a token issued
// at commit position since states it (bound to account, of provider),
// still holds: the device is bound to that account, the account belongs to
// provider, and no `update` command issued after since targeted the
// device, the account or the provider. ok is false otherwise.
func (m *Model) AuthorizedDevice(device, account, provider int64, since uint64) (d Device, ok bool) {
	var r devRef
	m.read(func(s *state) {
		r, ok = s.devRef(device)
		ok = ok && r.a.id == account && r.a.provider == provider &&
			s.drops.devices[device] <= since && s.drops.accounts[account] <= since && s.drops.providers[provider] <= since
	})
	if !ok {
		return Device{}, false
	}
	return devView(r), true
}

// AuthorizationDropped reports whether the authorisation of device, bound
// to account of provider as of commit position after, was dropped since:
// the negation of AuthorizedDevice.
func (m *Model) AuthorizationDropped(device, account, provider int64, after uint64) bool {
	_, ok := m.AuthorizedDevice(device, account, provider, after)
	return !ok
}

// DeviceLastOnline returns when bound device id last logged in, opened
// or closed a websocket (the occurred-at of the newest such event, whole
// seconds, UTC); ok is false when it did none since it was bound.
func (m *Model) DeviceLastOnline(id int64) (at time.Time, ok bool) {
	var sec int64
	m.read(func(s *state) {
		if r, found := s.devRef(id); found {
			sec = r.dev().last.Unix()
		}
	})
	if sec == 0 {
		return time.Time{}, false
	}
	return time.Unix(sec, 0).UTC(), true
}
