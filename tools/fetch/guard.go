package fetch

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// BlockedError is a connection refused because of where it would go.
type BlockedError struct {
	Host   string // the host name dialled, or the address itself
	Addr   netip.Addr
	Reason string // "loopback", "private", …
}

func (e *BlockedError) Error() string {
	if !e.Addr.IsValid() {
		return fmt.Sprintf("%s is a %s host: not fetched", e.Host, e.Reason)
	}
	if e.Host != "" && e.Host != e.Addr.String() {
		return fmt.Sprintf("%s resolves to %s, a %s address: not fetched", e.Host, e.Addr, e.Reason)
	}
	return fmt.Sprintf("%s is a %s address: not fetched", e.Addr, e.Reason)
}

// metadataHosts are cloud metadata names refused before any lookup.
var metadataHosts = []string{"metadata.google.internal", "metadata"}

// blockedPrefixes are ranges that are not the public internet, beyond
// what netip.Addr's predicates already name.
var blockedPrefixes = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "cloud metadata"},
	// IPv6 forms that carry an IPv4 address or reach one through a relay
	// or a gateway: where they lead cannot be checked, and none is how a
	// public site is reached.
	{netip.MustParsePrefix("::/96"), "IPv4-compatible"},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "IPv4-translated"},
	{netip.MustParsePrefix("2002::/16"), "6to4"},
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local NAT64"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
}

// nat64 embeds an IPv4 address in its last four bytes.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// blockReason says why a connection to a is refused, or "" if it is not.
func blockReason(a netip.Addr) string {
	a = a.Unmap()
	if a.Is6() && nat64.Contains(a) {
		b := a.As16()
		if r := blockReason(netip.AddrFrom4([4]byte(b[12:]))); r != "" {
			return r + " (NAT64)"
		}
	}
	switch {
	case a == netip.AddrFrom4([4]byte{169, 254, 169, 254}):
		return "cloud metadata"
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsMulticast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast"
	}
	for _, p := range blockedPrefixes {
		if p.prefix.Contains(a) {
			return p.reason
		}
	}
	return ""
}

// allowList holds CALLON_FETCH_ALLOW: host names ("*.example.com" for
// its subdomains) and CIDRs or single addresses.
type allowList struct {
	hosts    []string // lower case, no trailing dot
	suffixes []string // ".example.com" for "*.example.com"
	prefixes []netip.Prefix
}

func parseAllowList(entries []string) (allowList, error) {
	var l allowList
	for _, e := range entries {
		e = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(e), "."))
		switch {
		case e == "":
		case strings.Contains(e, "/"):
			p, err := netip.ParsePrefix(e)
			if err != nil {
				return l, fmt.Errorf("allow %q: not a CIDR such as 10.0.0.0/8", e)
			}
			l.prefixes = append(l.prefixes, p.Masked())
		case strings.HasPrefix(e, "*."):
			l.suffixes = append(l.suffixes, e[1:])
		default:
			if a, err := netip.ParseAddr(strings.Trim(e, "[]")); err == nil {
				l.prefixes = append(l.prefixes, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
				continue
			}
			if strings.ContainsAny(e, " :*,") {
				return l, fmt.Errorf("allow %q: not a host name, address or CIDR", e)
			}
			l.hosts = append(l.hosts, e)
		}
	}
	return l, nil
}

func (l allowList) host(h string) bool {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	for _, a := range l.hosts {
		if h == a {
			return true
		}
	}
	for _, s := range l.suffixes {
		if strings.HasSuffix(h, s) {
			return true
		}
	}
	return false
}

func (l allowList) addr(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range l.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// guardedDialer dials a host on the allow list as asked, and anything
// else only to addresses that pass blockReason, checked on the address
// actually connected to (after resolution, for every attempt), so neither
// DNS rebinding nor a redirect gets around it.
type guardedDialer struct {
	allow  allowList
	dialer net.Dialer // for allowed hosts
}

func (g *guardedDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if g.allow.host(host) {
		return g.dialer.DialContext(ctx, network, addr)
	}
	lower := strings.ToLower(strings.TrimSuffix(host, "."))
	for _, m := range metadataHosts {
		if lower == m {
			return nil, &BlockedError{Host: host, Reason: "cloud metadata"}
		}
	}
	d := g.dialer
	d.Control = func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("unexpected address %q", address)
		}
		a := ap.Addr().WithZone("")
		if g.allow.addr(a) {
			return nil
		}
		if r := blockReason(a); r != "" {
			return &BlockedError{Host: host, Addr: a.Unmap(), Reason: r}
		}
		return nil
	}
	return d.DialContext(ctx, network, addr)
}

// HostList is a list of hosts in CALLON_FETCH_ALLOW's syntax (host names,
// "*.example.com", addresses, CIDRs), for deciding where a URL goes
// rather than where a connection may.
type HostList struct{ l allowList }

// NewHostList parses entries; the error names a bad one.
func NewHostList(entries []string) (HostList, error) {
	l, err := parseAllowList(entries)
	return HostList{l}, err
}

// Contains reports whether host (a name or an address literal, as in a
// URL) is on the list.
func (h HostList) Contains(host string) bool {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return h.l.addr(a)
	}
	return h.l.host(host)
}
