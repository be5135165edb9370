package brokerconfig

// Named listeners, as Kafka's listeners, advertised.listeners and
// listener.security.protocol.map configure them:
//
//	listeners=HOST://0.0.0.0:9092,DOCKER://0.0.0.0:29092
//	advertised.listeners=HOST://localhost:9092,DOCKER://broker:29092
//	listener.security.protocol.map=HOST:PLAINTEXT,DOCKER:PLAINTEXT
//
// A client is told (Metadata, DescribeCluster, FindCoordinator) the
// advertised address of the listener it connected to, so a client on the
// host and one on a container network each reach the broker by a name that
// resolves where it runs.
//
//   - Names are case-insensitive and upper-cased, as Kafka's ListenerName
//     does; each name and each non-zero port appears once.
//   - An empty host binds every interface (Kafka's "PLAINTEXT://:9092").
//   - A listener without an advertised entry advertises its bound address,
//     "localhost" for an unspecified host.
//   - The protocols are PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL
//     (package auth; docs/security.md): without a protocol map a
//     listener named after one of them is that protocol (Kafka's default
//     map); with one, every entry maps to one of them and every listener
//     must have an entry.
//   - advertised.listeners without listeners advertises the one listener
//     from Settings.Listen, which is then named PLAINTEXT.

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Security protocols of a listener (Kafka's SecurityProtocol names).
const (
	protoPlaintext     = "PLAINTEXT"
	protoSSL           = "SSL"
	protoSASLPlaintext = "SASL_PLAINTEXT"
	protoSASLSSL       = "SASL_SSL"
)

// The Kafka properties that configure listeners. They are taken out of
// Settings.Props before the other properties are checked.
const (
	propListeners           = "listeners"
	propAdvertisedListeners = "advertised.listeners"
	propProtocolMap         = "listener.security.protocol.map"
)

// Listener is one named Kafka listener.
type Listener struct {
	// Name is the listener's name (PLAINTEXT, HOST, DOCKER).
	Name string
	// Listen is the address to bind, host:port; port 0 picks a free one.
	Listen string
	// Advertise is the host:port clients connecting to this listener are
	// told. Empty means the bound address, "localhost" for an unspecified
	// host.
	Advertise string
	// Protocol is the listener's security protocol: "" (PLAINTEXT),
	// "SSL", "SASL_PLAINTEXT" or "SASL_SSL".
	Protocol string
}

// UsesTLS reports whether the listener wraps its connections in TLS
// (SSL, SASL_SSL).
func (l Listener) UsesTLS() bool { return l.Protocol == protoSSL || l.Protocol == protoSASLSSL }

// UsesSASL reports whether the listener authenticates its connections
// with SASL before serving them (SASL_PLAINTEXT, SASL_SSL).
func (l Listener) UsesSASL() bool {
	return l.Protocol == protoSASLPlaintext || l.Protocol == protoSASLSSL
}

// defaultListenerName names the listener of the simple --listen form.
const defaultListenerName = "PLAINTEXT"

// ParseListeners turns Kafka's three listener properties into listener
// configs. listen is the address of the single listener used when
// listeners is empty.
func ParseListeners(listeners, advertised, protocolMap, listen string) ([]Listener, error) {
	protocols, err := parseProtocolMap(protocolMap)
	if err != nil {
		return nil, err
	}
	var out []Listener
	if strings.TrimSpace(listeners) == "" {
		out = []Listener{{Name: defaultListenerName, Listen: listen}}
	} else {
		names := make(map[string]bool)
		ports := make(map[string]string)
		for _, entry := range strings.Split(listeners, ",") {
			name, addr, err := parseListenerEntry(propListeners, entry)
			if err != nil {
				return nil, err
			}
			if names[name] {
				return nil, fmt.Errorf("%s: listener %s appears twice", propListeners, name)
			}
			_, port, _ := net.SplitHostPort(addr)
			if other, ok := ports[port]; ok && port != "0" {
				return nil, fmt.Errorf("%s: listeners %s and %s both use port %s", propListeners, other, name, port)
			}
			names[name], ports[port] = true, name
			out = append(out, Listener{Name: name, Listen: addr})
		}
	}
	for i, l := range out {
		p, ok := protocols[l.Name]
		switch {
		case protocols == nil && !isProtocol(l.Name):
			return nil, fmt.Errorf("listener %s: not a security protocol; name it in %s (%s)", l.Name, propProtocolMap, protocolList)
		case protocols != nil && !ok:
			return nil, fmt.Errorf("listener %s: missing from %s", l.Name, propProtocolMap)
		case !ok:
			p = l.Name
		}
		if p != protoPlaintext {
			out[i].Protocol = p
		}
	}
	if strings.TrimSpace(advertised) == "" {
		return out, nil
	}
	seen := make(map[string]bool)
	for _, entry := range strings.Split(advertised, ",") {
		name, addr, err := parseListenerEntry(propAdvertisedListeners, entry)
		if err != nil {
			return nil, err
		}
		if err := checkAdvertise(addr); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", propAdvertisedListeners, name, err)
		}
		i := listenerIndex(out, name)
		if i < 0 {
			return nil, fmt.Errorf("%s: %s is not a listener in %s", propAdvertisedListeners, name, propListeners)
		}
		if seen[name] {
			return nil, fmt.Errorf("%s: listener %s appears twice", propAdvertisedListeners, name)
		}
		seen[name] = true
		out[i].Advertise = addr
	}
	return out, nil
}

func listenerIndex(ls []Listener, name string) int {
	for i, l := range ls {
		if l.Name == name {
			return i
		}
	}
	return -1
}

// parseListenerEntry splits "NAME://host:port".
func parseListenerEntry(prop, entry string) (name, addr string, err error) {
	entry = strings.TrimSpace(entry)
	name, addr, ok := strings.Cut(entry, "://")
	name = strings.ToUpper(strings.TrimSpace(name))
	if !ok || name == "" {
		return "", "", fmt.Errorf("%s: %q: want NAME://HOST:PORT", prop, entry)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", "", fmt.Errorf("%s: %q: %v", prop, entry, err)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && prop == propAdvertisedListeners) {
		return "", "", fmt.Errorf("%s: %q: bad port %q", prop, entry, port)
	}
	return name, net.JoinHostPort(host, port), nil
}

// parseProtocolMap parses "NAME:PROTOCOL,..."; an empty map is nil.
func parseProtocolMap(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	m := make(map[string]string)
	for _, entry := range strings.Split(s, ",") {
		name, proto, ok := strings.Cut(strings.TrimSpace(entry), ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || name == "" || proto == "" {
			return nil, fmt.Errorf("%s: %q: want NAME:PROTOCOL", propProtocolMap, entry)
		}
		if !isProtocol(proto) {
			return nil, fmt.Errorf("%s: %s maps to %s: not a security protocol, want one of %s", propProtocolMap, name, proto, protocolList)
		}
		m[name] = proto
	}
	return m, nil
}

// protocolList names the security protocols in error messages.
const protocolList = protoPlaintext + ", " + protoSSL + ", " + protoSASLPlaintext + " or " + protoSASLSSL

// isProtocol reports whether name is one of Kafka's security protocols.
func isProtocol(name string) bool {
	switch name {
	case protoPlaintext, protoSSL, protoSASLPlaintext, protoSASLSSL:
		return true
	}
	return false
}

// checkAdvertise checks an advertised host:port: a host, and a port from 1
// to 65535.
func checkAdvertise(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 || host == "" {
		return fmt.Errorf("%q: want host:port with a port from 1 to 65535", addr)
	}
	return nil
}
