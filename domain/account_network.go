package domain

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"time"
)

// AccountNetworks are one provider's account networks (TVIP's
// account_network): IP networks whose addresses belong to an account, so
// that a device connecting from one of them can be authorised as that
// account without a login. They are one aggregate per provider (stream
// networks-{provider}) because no two of a provider's networks may overlap:
// an address must lead to one account. The zero value is a provider with
// no networks.
type AccountNetworks struct {
	Provider int64
	Networks []AccountNetwork // in the order added
}

// AccountNetwork is one network of an account. Its id is allocated outside
// the domain.
type AccountNetwork struct {
	ID          int64
	Network     netip.Prefix // masked: no host bits set
	Account     int64
	Description *string
}

// MaxAccountNetworks bounds a provider's networks: every change loads them
// all to check overlaps.
const MaxAccountNetworks = 10_000

// MaxNetworkDescriptionLen is the longest description of a network.
const MaxNetworkDescriptionLen = 1000

var networkDescriptionRule = textRule{max: MaxNetworkDescriptionLen, multiline: true}

// NetworksStream returns "networks-{provider}": a provider's account
// networks.
func NetworksStream(provider int64) string { return "networks-" + strconv.FormatInt(provider, 10) }

// ParseNetwork reads a network in CIDR notation ("10.20.0.0/16",
// "2001:db8::/32"); a bare address is a network of that one address. An
// IPv4 address written as IPv6 ("::ffff:10.0.0.0/104") is read as IPv4.
// Host bits must be zero, so that what is stored is what was meant.
func ParseNetwork(s string) (netip.Prefix, error) {
	if s == "" {
		return netip.Prefix{}, errors.New(problemRequired)
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		a, aerr := netip.ParseAddr(s)
		if aerr != nil || a.Zone() != "" {
			return netip.Prefix{}, errors.New("must be a network in CIDR notation, such as 10.20.0.0/16")
		}
		a = a.Unmap()
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if a := p.Addr(); a.Is4In6() {
		bits := p.Bits() - 96
		if bits < 0 {
			return netip.Prefix{}, errors.New("an IPv4-mapped network must be at least /96")
		}
		p = netip.PrefixFrom(a.Unmap(), bits)
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, fmt.Errorf("has host bits set; the network is %s", m)
	}
	return p, nil
}

// Network returns the network with the given id.
func (n AccountNetworks) Network(id int64) (AccountNetwork, bool) {
	i := n.index(id)
	if i < 0 {
		return AccountNetwork{}, false
	}
	return n.Networks[i], true
}

func (n AccountNetworks) index(id int64) int {
	return slices.IndexFunc(n.Networks, func(x AccountNetwork) bool { return x.ID == id })
}

// overlapping returns a network other than except that overlaps p.
func (n AccountNetworks) overlapping(p netip.Prefix, except int64) (AccountNetwork, bool) {
	for _, x := range n.Networks {
		if x.ID != except && x.Network.Overlaps(p) {
			return x, true
		}
	}
	return AccountNetwork{}, false
}

// NetworkCommand is a command on a provider's account networks:
// AddAccountNetwork, ChangeAccountNetwork, RemoveAccountNetwork or
// RemoveAccountNetworks.
type NetworkCommand interface {
	Stream() string
	networkCommand()
}

// AddAccountNetwork adds network ID of Account. That the account exists
// and belongs to Provider is checked outside the domain.
type AddAccountNetwork struct {
	Provider    int64
	ID          int64
	Network     string
	Account     int64
	Description *string
}

// ChangeAccountNetwork changes the fields present in it.
type ChangeAccountNetwork struct {
	Provider    int64
	ID          int64
	Network     Optional[string]
	Account     Optional[int64]
	Description Optional[string]
}

// RemoveAccountNetwork removes network ID.
type RemoveAccountNetwork struct {
	Provider int64
	ID       int64
}

// RemoveAccountNetworks removes every network of Account: what follows the
// account's deletion.
type RemoveAccountNetworks struct {
	Provider int64
	Account  int64
}

// Stream implements NetworkCommand.
func (c AddAccountNetwork) Stream() string { return NetworksStream(c.Provider) }

// Stream implements NetworkCommand.
func (c ChangeAccountNetwork) Stream() string { return NetworksStream(c.Provider) }

// Stream implements NetworkCommand.
func (c RemoveAccountNetwork) Stream() string { return NetworksStream(c.Provider) }

// Stream implements NetworkCommand.
func (c RemoveAccountNetworks) Stream() string { return NetworksStream(c.Provider) }

func (AddAccountNetwork) networkCommand()     {}
func (ChangeAccountNetwork) networkCommand()  {}
func (RemoveAccountNetwork) networkCommand()  {}
func (RemoveAccountNetworks) networkCommand() {}

// Account network event type names.
const (
	AccountNetworkAddedType   = "AccountNetworkAdded.v1"
	AccountNetworkChangedType = "AccountNetworkChanged.v1"
	AccountNetworkRemovedType = "AccountNetworkRemoved.v1"
)

// AccountNetworkAdded records a network of an account; Network is in CIDR
// notation, masked.
type AccountNetworkAdded struct {
	Provider    int64   `json:"provider"`
	NetworkID   int64   `json:"network_id"`
	Network     string  `json:"network"`
	Account     int64   `json:"account"`
	Description *string `json:"description,omitempty"`
}

// AccountNetworkChanged carries the fields of a network that changed.
// Owner is the network's account after the change, whether or not the
// account changed: the data subject its personal values belong to (0 in
// events recorded before it was kept).
type AccountNetworkChanged struct {
	Provider    int64            `json:"provider"`
	NetworkID   int64            `json:"network_id"`
	Network     Optional[string] `json:"network,omitzero"`
	Account     Optional[int64]  `json:"account,omitzero"`
	Description Optional[string] `json:"description,omitzero"`
	Owner       int64            `json:"owner,omitempty"`
}

// AccountNetworkRemoved records that a network was removed.
type AccountNetworkRemoved struct {
	Provider  int64 `json:"provider"`
	NetworkID int64 `json:"network_id"`
	Account   int64 `json:"account"`
}

// EventType implements Event.
func (AccountNetworkAdded) EventType() string { return AccountNetworkAddedType }

// EventType implements Event.
func (AccountNetworkChanged) EventType() string { return AccountNetworkChangedType }

// EventType implements Event.
func (AccountNetworkRemoved) EventType() string { return AccountNetworkRemovedType }

// RegisterNetworkEvents registers the account network events with r.
func registerNetworkEvents(r *Registry) {
	r.Register(AccountNetworkAddedType, func() Event { return new(AccountNetworkAdded) })
	r.Register(AccountNetworkChangedType, func() Event { return new(AccountNetworkChanged) })
	r.Register(AccountNetworkRemovedType, func() Event { return new(AccountNetworkRemoved) })
}

// NetworksDecider returns the decider of a provider's account networks.
func NetworksDecider() Decider[AccountNetworks, NetworkCommand] {
	return Decider[AccountNetworks, NetworkCommand]{
		Initial: func() AccountNetworks { return AccountNetworks{} },
		Evolve:  evolveNetworks,
		Decide:  decideNetworks,
	}
}

func decideNetworks(s AccountNetworks, c NetworkCommand, _ time.Time) ([]Event, error) {
	switch c := c.(type) {
	case AddAccountNetwork:
		return addNetwork(s, c)
	case ChangeAccountNetwork:
		return changeNetwork(s, c)
	case RemoveAccountNetwork:
		cur, ok := s.Network(c.ID)
		if !ok {
			return nil, notFound("account network", c.ID)
		}
		return []Event{AccountNetworkRemoved{Provider: c.Provider, NetworkID: c.ID, Account: cur.Account}}, nil
	case RemoveAccountNetworks:
		var events []Event
		for _, x := range s.Networks {
			if x.Account == c.Account {
				events = append(events, AccountNetworkRemoved{Provider: c.Provider, NetworkID: x.ID, Account: x.Account})
			}
		}
		return events, nil
	}
	return nil, errors.New("domain: unknown account network command")
}

func addNetwork(s AccountNetworks, c AddAccountNetwork) ([]Event, error) {
	var p problems
	p.add("id", checkID(c.ID))
	if c.Provider <= 0 {
		p.add("provider", problemRequired)
	}
	if c.Account <= 0 {
		p.add("account", problemRequired)
	}
	network, err := ParseNetwork(c.Network)
	p.addErr("network", err)
	p.add("description", networkDescriptionRule.checkPtr(c.Description))
	if err == nil {
		if other, ok := s.overlapping(network, c.ID); ok {
			p.add("network", overlapProblem(other))
		}
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	if _, ok := s.Network(c.ID); ok {
		return nil, alreadyExists("account network", c.ID)
	}
	if len(s.Networks) >= MaxAccountNetworks {
		return nil, NewValidationError("network", fmt.Sprintf("the provider has the maximum of %d networks", MaxAccountNetworks))
	}
	return []Event{AccountNetworkAdded{Provider: c.Provider, NetworkID: c.ID, Network: network.String(),
		Account: c.Account, Description: c.Description}}, nil
}

func changeNetwork(s AccountNetworks, c ChangeAccountNetwork) ([]Event, error) {
	cur, ok := s.Network(c.ID)
	if !ok {
		return nil, notFound("account network", c.ID)
	}
	var p problems
	e := AccountNetworkChanged{Provider: c.Provider, NetworkID: c.ID}
	if v, ok := c.Network.Get(); ok {
		network, err := ParseNetwork(v)
		p.addErr("network", err)
		if err == nil {
			if other, ok := s.overlapping(network, c.ID); ok {
				p.add("network", overlapProblem(other))
			} else if network != cur.Network {
				e.Network = Some(network.String())
			}
		}
	} else if c.Network.IsNull() {
		p.add("network", problemNotNull)
	}
	e.Account = patchValue(&p, "account", c.Account, cur.Account, checkID)
	e.Description = patchNullable(&p, "description", c.Description, cur.Description, networkDescriptionRule.check)
	if err := p.err(); err != nil {
		return nil, err
	}
	if !e.Network.Present && !e.Account.Present && !e.Description.Present {
		return nil, nil
	}
	e.Owner = e.Account.Or(cur.Account)
	return []Event{e}, nil
}

func overlapProblem(other AccountNetwork) string {
	return fmt.Sprintf("overlaps network %d (%s) of account %d", other.ID, other.Network, other.Account)
}

func evolveNetworks(s AccountNetworks, e Event) AccountNetworks {
	switch e := e.(type) {
	case AccountNetworkAdded:
		s.Provider = e.Provider
		p, _ := netip.ParsePrefix(e.Network)
		s.Networks = appendCopy(s.Networks, AccountNetwork{ID: e.NetworkID, Network: p, Account: e.Account, Description: e.Description})
	case AccountNetworkChanged:
		if i := s.index(e.NetworkID); i >= 0 {
			s.Networks = slices.Clone(s.Networks)
			x := &s.Networks[i]
			if v, ok := e.Network.Get(); ok {
				x.Network, _ = netip.ParsePrefix(v)
			}
			applyValue(&x.Account, e.Account)
			applyNullable(&x.Description, e.Description)
		}
	case AccountNetworkRemoved:
		if i := s.index(e.NetworkID); i >= 0 {
			s.Networks = deleteCopy(s.Networks, i)
		}
	}
	return s
}
