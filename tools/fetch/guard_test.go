package fetch

import (
	"net/netip"
	"testing"
)

func TestBlockReason(t *testing.T) {
	t.Parallel()
	tests := []struct{ addr, want string }{
		{"127.0.0.1", "loopback"},
		{"127.8.9.10", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"10.0.0.1", "private"},
		{"172.16.5.4", "private"},
		{"192.168.1.1", "private"},
		{"fc00::1", "private"},
		{"fd00:ec2::254", "private"},
		{"169.254.169.254", "cloud metadata"},
		{"169.254.1.1", "link-local"},
		{"fe80::1", "link-local"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"0.1.2.3", "this-network"},
		{"224.0.0.1", "multicast"},
		{"ff02::1", "multicast"},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.127.255.255", "carrier-grade NAT"},
		{"255.255.255.255", "reserved"},
		{"64:ff9b::a00:1", "private (NAT64)"},
		{"8.8.8.8", ""},
		{"100.128.0.1", ""},
		{"2606:4700:4700::1111", ""},
		{"64:ff9b::808:808", ""},
	}
	for _, tc := range tests {
		if got := blockReason(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("blockReason(%s) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

func TestAllowList(t *testing.T) {
	t.Parallel()
	l, err := parseAllowList([]string{" intranet.example ", "*.corp.example", "10.0.0.0/8", "192.168.1.5", "fd00::/8", ""})
	if err != nil {
		t.Fatal(err)
	}
	hosts := []struct {
		host string
		want bool
	}{
		{"intranet.example", true}, {"INTRANET.example.", true}, {"x.intranet.example", false},
		{"a.corp.example", true}, {"corp.example", false}, {"evilcorp.example", false},
	}
	for _, tc := range hosts {
		if got := l.host(tc.host); got != tc.want {
			t.Errorf("host(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
	addrs := []struct {
		addr string
		want bool
	}{
		{"10.1.2.3", true}, {"::ffff:10.1.2.3", true}, {"192.168.1.5", true}, {"192.168.1.6", false},
		{"fd12::1", true}, {"fc00::1", false}, {"127.0.0.1", false},
	}
	for _, tc := range addrs {
		if got := l.addr(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("addr(%s) = %v, want %v", tc.addr, got, tc.want)
		}
	}
}

// The IPv6 forms that carry an IPv4 address, or reach one through a
// gateway, are refused: what they reach cannot be checked (the IPv4
// address they embed, or a relay's choice). (They used to pass: an
// address such as ::ffff:0:127.0.0.1 or 2002:7f00:1:: reached loopback.)
func TestBlockReasonEmbeddedIPv4(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ addr, want string }{
		{"::127.0.0.1", "IPv4-compatible"},
		{"::10.0.0.1", "IPv4-compatible"},
		{"::8.8.8.8", "IPv4-compatible"},
		{"::ffff:0:127.0.0.1", "IPv4-translated"},
		{"::ffff:0:10.1.2.3", "IPv4-translated"},
		{"2002:7f00:1::1", "6to4"},
		{"2002:a00:1::", "6to4"},
		{"2002:808:808::1", "6to4"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"},
		{"64:ff9b:1::a00:1", "local NAT64"},
		{"64:ff9b:1:ffff::808:808", "local NAT64"},
		{"2001:db8::1", "documentation"},
		{"2606:4700:4700::1111", ""},
		{"2001:4860:4860::8888", ""},
	} {
		if got := blockReason(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("blockReason(%s) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}
