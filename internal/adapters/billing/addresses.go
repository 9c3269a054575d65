package billing

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// ErrForbiddenAddress is a billing call refused because billing's address
// is one the proxy must not reach (Policy).
var ErrForbiddenAddress = errors.New("billing address not allowed")

// Policy decides which addresses billing calls may connect to. By default
// it refuses every address that reaches into the operator's own hosts and
// networks rather than a billing system on the internet: loopback,
// link-local (where cloud metadata services answer), unspecified, private
// (RFC 1918, RFC 6598 shared, IPv6 unique local) and the metadata services'
// own addresses. Allowed networks are allowed whatever they hold: operators
// whose billing runs on their LAN or on the same host list them.
//
// The address checked is the one connected to, after name resolution
// (Client's dialer), so a name that resolves to a refused address, or
// starts to (DNS rebinding), is refused too.
type Policy struct {
	Allowed []netip.Prefix
}

// metadataAddresses are cloud metadata services outside the link-local
// range: AWS's IPv6 endpoint, Alibaba Cloud's, Azure's wire server.
var metadataAddresses = []netip.Addr{
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("100.100.100.200"),
	netip.MustParseAddr("168.63.129.16"),
}

// privateNetworks are refused as private; netip's IsPrivate covers RFC 1918
// and fc00::/7, this adds the shared address space of carrier-grade NAT and
// the "this network" block, which Linux connects to the local host.
var privateNetworks = []netip.Prefix{
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("0.0.0.0/8"),
}

// metadataNames are the host names of cloud metadata services.
var metadataNames = []string{
	"metadata", "metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal",
}

// Check returns nil when a call may connect to addr, else an error wrapping
// ErrForbiddenAddress that says what kind of address it is.
func (p Policy) Check(addr netip.Addr) error {
	addr = addr.Unmap() // ::ffff:127.0.0.1 is 127.0.0.1
	for _, n := range p.Allowed {
		if n.Contains(addr) {
			return nil
		}
	}
	var kind string
	switch {
	case !addr.IsValid():
		kind = "invalid"
	case addr.IsLoopback():
		kind = "loopback"
	case addr.IsUnspecified():
		kind = "unspecified"
	case addr.IsLinkLocalUnicast(), addr.IsLinkLocalMulticast(), addr.IsInterfaceLocalMulticast():
		kind = "link-local"
	case containsAddr(metadataAddresses, addr):
		kind = "a cloud metadata service"
	case addr.IsPrivate(), inAny(privateNetworks, addr):
		kind = "private"
	case addr.IsMulticast():
		kind = "multicast"
	default:
		return nil
	}
	return fmt.Errorf("%w: %s is %s (allow its network with billing_allowed_networks)", ErrForbiddenAddress, addr, kind)
}

func containsAddr(list []netip.Addr, a netip.Addr) bool {
	for _, b := range list {
		if a == b {
			return true
		}
	}
	return false
}

func inAny(nets []netip.Prefix, a netip.Addr) bool {
	for _, n := range nets {
		if n.Contains(a) {
			return true
		}
	}
	return false
}

// control is the Client's dialer control: it runs after name resolution,
// just before each connection, with the address connected to.
func (p Policy) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %q is not an IP address and port", ErrForbiddenAddress, address)
	}
	return p.Check(ap.Addr())
}

// CheckURL checks a billing URL without resolving its host: an absolute
// http or https URL, without user information (credentials would be sent
// to billing with every call, and logged with the URL), whose host is not
// an address Check refuses, not a name of the local host (localhost) or of
// a cloud metadata service, and not an IPv4 address in a form other than
// four decimal parts (127.1, 2130706433, 0x7f.0.0.1: resolvers read them
// differently). It is the early, friendly check of the Admin API; the
// dialer's check at connect time is the one that holds.
func (p Policy) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return ErrBadBillingURL
	}
	if u.User != nil {
		return ErrUserInfo
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if addr, err := netip.ParseAddr(host); err == nil {
		return p.Check(addr)
	}
	switch {
	case host == "localhost" || strings.HasSuffix(host, ".localhost"):
		if err := p.Check(netip.MustParseAddr("127.0.0.1")); err != nil {
			return fmt.Errorf("%w: %s names the local host", ErrForbiddenAddress, host)
		}
	case containsName(metadataNames, host):
		return fmt.Errorf("%w: %s names a cloud metadata service", ErrForbiddenAddress, host)
	case isNumericIPv4(host):
		return fmt.Errorf("%w: %s is an IPv4 address in an ambiguous form; write it as four decimal numbers", ErrForbiddenAddress, host)
	}
	return nil
}

// ErrUserInfo is a billing URL with user information (user:password@).
var ErrUserInfo = errors.New("billing url must not contain user information (user:password@)")

func containsName(list []string, name string) bool {
	for _, n := range list {
		if n == name {
			return true
		}
	}
	return false
}

// isNumericIPv4 reports whether host is an IPv4 address in one of the forms
// inet_aton accepts beside the dotted quad: one to four parts, each a
// decimal, octal (leading 0) or hexadecimal (0x) number (127.1,
// 2130706433, 0x7f.1, 0177.0.0.1).
func isNumericIPv4(host string) bool {
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return false
	}
	for _, p := range parts {
		if !isInetNumber(p) {
			return false
		}
	}
	return true
}

func isInetNumber(s string) bool {
	digits := "0123456789"
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, digits = s[2:], "0123456789abcdefABCDEF"
	case len(s) > 1 && s[0] == '0':
		s, digits = s[1:], "01234567"
	}
	return s != "" && strings.Trim(s, digits) == ""
}
