package readmodel

import (
	"cmp"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"tvsm/domain"
)

// Account networks: each provider's networks as the domain's aggregate
// (stream networks-{provider}), and a table of them sorted by first
// address. A provider's networks never overlap, so the one network that
// can hold an address is the last one starting at or before it.

// netTable is one provider's networks, sorted by first address.
type netTable []domain.AccountNetwork

// applyNetworks evolves a provider's networks and rebuilds its table.
func (s *state) applyNetworks(evolve func(domain.AccountNetworks, domain.Event) domain.AccountNetworks, c *change) {
	cur, ok := s.networks[c.id]
	if ok && c.rev <= cur.rev {
		return
	}
	next := evolve(cur.v, c.event)
	s.networks[c.id] = versioned[domain.AccountNetworks]{v: next, rev: c.rev}
	s.netTables[c.id] = tableOf(next)
}

func tableOf(n domain.AccountNetworks) netTable {
	t := slices.Clone(netTable(n.Networks))
	slices.SortFunc(t, func(a, b domain.AccountNetwork) int {
		return cmp.Or(a.Network.Addr().Compare(b.Network.Addr()), cmp.Compare(a.Network.Bits(), b.Network.Bits()))
	})
	return t
}

// lookup returns the network holding addr.
func (t netTable) lookup(addr netip.Addr) (domain.AccountNetwork, bool) {
	addr = addr.Unmap()
	i, _ := slices.BinarySearchFunc(t, addr, func(n domain.AccountNetwork, a netip.Addr) int {
		if n.Network.Addr().Compare(a) <= 0 {
			return -1
		}
		return 1
	})
	if i == 0 {
		return domain.AccountNetwork{}, false
	}
	if n := t[i-1]; n.Network.Contains(addr) {
		return n, true
	}
	return domain.AccountNetwork{}, false
}

// AccountNetwork is a network of an account, with its provider.
type AccountNetwork struct {
	domain.AccountNetwork
	Provider int64
}

// NetworkByAddress returns the network of provider that holds addr, whose
// account is live: a device connecting from addr may be authorised as
// that account.
func (m *Model) NetworkByAddress(provider int64, addr netip.Addr) (AccountNetwork, bool) {
	var n domain.AccountNetwork
	var ok bool
	m.read(func(s *state) {
		n, ok = s.netTables[provider].lookup(addr)
		ok = ok && s.account(n.Account) != nil
	})
	if !ok {
		return AccountNetwork{}, false
	}
	return networkView(n, provider), true
}

// AccountNetworks returns the networks of provider's aggregate as the
// domain has them, and the revision of its stream (0 and false when it
// has none yet).
func (m *Model) AccountNetworks(provider int64) (domain.AccountNetworks, uint64, bool) {
	var v versioned[domain.AccountNetworks]
	var ok bool
	m.read(func(s *state) { v, ok = s.networks[provider] })
	return copyNetworks(v.v), v.rev, ok
}

// AccountNetworkByID returns network id.
func (m *Model) AccountNetworkByID(id int64) (AccountNetwork, bool) {
	var out AccountNetwork
	var ok bool
	m.read(func(s *state) {
		for p, t := range s.netTables {
			for _, n := range t {
				if n.ID == id {
					out, ok = networkView(n, p), true
					return
				}
			}
		}
	})
	return out, ok
}

// NetworkSortFields are the fields ListNetworks can sort by.
var NetworkSortFields = []string{"id", "account", "network"}

var networkFields = map[string]func(a, b AccountNetwork) int{
	"id":      byNetworkID,
	"account": func(a, b AccountNetwork) int { return cmp.Compare(a.Account, b.Account) },
	"network": func(a, b AccountNetwork) int {
		return cmp.Or(a.Network.Addr().Compare(b.Network.Addr()), cmp.Compare(a.Network.Bits(), b.Network.Bits()))
	},
}

func byNetworkID(a, b AccountNetwork) int { return cmp.Compare(a.ID, b.ID) }

// NetworkQuery selects account networks.
type NetworkQuery struct {
	Scope Scope
	Page
	// Account keeps the networks of one account (0: any).
	Account int64
	// Provider keeps the networks of one provider (0: any).
	Provider int64
	// QuickSearch keeps networks whose CIDR text or description contains
	// it, ignoring case, or that hold it when it is an address.
	QuickSearch string
}

// ListNetworks returns the networks q selects, in q's order.
func (m *Model) ListNetworks(q NetworkQuery) (List[AccountNetwork], error) {
	order, err := comparator(q.Sort, networkFields, byNetworkID)
	if err != nil {
		return List[AccountNetwork]{}, err
	}
	provider, ok := q.Scope.narrow(q.Provider)
	if !ok {
		return emptyList[AccountNetwork](), nil
	}
	needle := foldNeedle(strings.TrimSpace(q.QuickSearch))
	addr, addrErr := netip.ParseAddr(needle)
	var found []AccountNetwork
	m.read(func(s *state) {
		for p, t := range s.netTables {
			if provider != 0 && p != provider {
				continue
			}
			for _, n := range t {
				if q.Account != 0 && n.Account != q.Account {
					continue
				}
				if needle != "" && !containsFold(n.Network.String(), needle) && !(n.Description != nil && containsFold(*n.Description, needle)) &&
					!(addrErr == nil && n.Network.Contains(addr.Unmap())) && strconv.FormatInt(n.Account, 10) != needle {
					continue
				}
				found = append(found, networkView(n, p))
			}
		}
	})
	total, page := sortPage(found, q.Page, order)
	return listOf(total, page, func(n AccountNetwork) AccountNetwork { return n }), nil
}

func networkView(n domain.AccountNetwork, provider int64) AccountNetwork {
	n.Description = clonePtr(n.Description)
	return AccountNetwork{AccountNetwork: n, Provider: provider}
}

func copyNetworks(n domain.AccountNetworks) domain.AccountNetworks {
	n.Networks = slices.Clone(n.Networks)
	for i := range n.Networks {
		n.Networks[i].Description = clonePtr(n.Networks[i].Description)
	}
	return n
}
