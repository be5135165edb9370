package brokerconfig

import (
	"errors"
	"strings"
)

// Addresses are checked and split here as package net would, without
// importing it: this package must not reach sockets (docs/design.md, "The
// layering rule"), and net.SplitHostPort and net.JoinHostPort are pure
// string functions. splitHostPort follows Go's net.SplitHostPort (BSD
// licence, The Go Authors) step for step and returns the same error text;
// TestSplitHostPortAsNet compares the two.

// splitHostPort splits "host:port", "host%zone:port", "[host]:port" or
// "[host%zone]:port" into host (or host%zone) and port, as
// net.SplitHostPort does.
func splitHostPort(hostport string) (host, port string, err error) {
	const (
		missingPort   = "missing port in address"
		tooManyColons = "too many colons in address"
	)
	addrErr := func(addr, why string) (host, port string, err error) {
		if addr != "" { // as net.AddrError.Error
			why = "address " + addr + ": " + why
		}
		return "", "", errors.New(why)
	}
	j, k := 0, 0

	// The port starts after the last colon.
	i := strings.LastIndexByte(hostport, ':')
	if i < 0 {
		return addrErr(hostport, missingPort)
	}

	if hostport[0] == '[' {
		// Expect the first ']' just before the last ':'.
		end := strings.IndexByte(hostport, ']')
		if end < 0 {
			return addrErr(hostport, "missing ']' in address")
		}
		switch end + 1 {
		case len(hostport):
			// There can't be a ':' behind the ']' now.
			return addrErr(hostport, missingPort)
		case i:
			// The expected result.
		default:
			// Either ']' isn't followed by a colon, or it is
			// followed by a colon that is not the last one.
			if hostport[end+1] == ':' {
				return addrErr(hostport, tooManyColons)
			}
			return addrErr(hostport, missingPort)
		}
		host = hostport[1:end]
		j, k = 1, end+1 // there can't be a '[' resp. ']' before these positions
	} else {
		host = hostport[:i]
		if strings.IndexByte(host, ':') >= 0 {
			return addrErr(hostport, tooManyColons)
		}
	}
	if strings.IndexByte(hostport[j:], '[') >= 0 {
		return addrErr(hostport, "unexpected '[' in address")
	}
	if strings.IndexByte(hostport[k:], ']') >= 0 {
		return addrErr(hostport, "unexpected ']' in address")
	}

	port = hostport[i+1:]
	return host, port, nil
}

// joinHostPort combines host and port into "host:port", bracketing a host
// with a colon (an IPv6 literal), as net.JoinHostPort does.
func joinHostPort(host, port string) string {
	if strings.IndexByte(host, ':') >= 0 {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}
