package brokerconfig

import (
	"fmt"
	"maps"
	"math"
	"net"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sharebroker/sharebroker/configdef"
	"github.com/sharebroker/sharebroker/group"
)

// DefaultListen is where the broker listens unless told otherwise.
const DefaultListen = "127.0.0.1:9092"

// DefaultHTTP is where the command's HTTP server (metrics, health,
// inspection) listens unless told otherwise. An embedded broker has no HTTP
// server unless its configuration names one.
const DefaultHTTP = "127.0.0.1:9644"

// DefaultClusterID is the cluster ID reported when none is configured. It is
// stable so that clients that cache it see the same cluster across restarts.
const DefaultClusterID = "sharebroker-cluster-0001"

// Settings are the parts of broker.Config this package checks and
// completes; the fields mean what broker.Config's of the same names do.
// The rest of broker.Config (TLS files, SASL users, the Prometheus
// registry, logger and clock) is the edge's: their types reach package
// net, which this package must not.
type Settings struct {
	Listen    string
	Advertise string
	Listeners []Listener
	HTTP      string
	NodeID    int32
	Nodes     int
	ClusterID string
	// Props are the Kafka property overrides by name (--config key=value).
	Props   map[string]string
	DataDir string
}

// Resolved is Settings checked, with defaults applied.
type Resolved struct {
	// Settings with Listen, Listeners, Nodes, ClusterID and DataDir
	// filled in; Props are still the overrides as given.
	Settings
	// Values holds every broker property, set or defaulted (log.dirs as
	// the data directory resolved).
	Values Props
	// Share is the share groups' broker-level configuration, from the
	// group.share.* properties.
	Share group.ShareConfig
	// ClientAuth is ssl.client.auth as parseClientAuth returned it.
	ClientAuth string
	// Ignored are the Kafka properties given that this broker accepts
	// and does not use (kraft.go), by name, for the broker to log.
	Ignored []IgnoredProperty
}

// Resolve checks s and applies defaults; the first mistake found is the
// error, naming what is wrong. ssl.client.auth belongs to package auth,
// which this package cannot import (it reaches net): Resolve takes it out
// of the properties and parses it with parseClientAuth, at the point of
// the checks where the broker always has.
func Resolve(s Settings, parseClientAuth func(string) (string, error)) (*Resolved, error) {
	r := &Resolved{Settings: s}
	if r.Listen == "" {
		r.Listen = DefaultListen
	}
	if _, _, err := net.SplitHostPort(r.Listen); err != nil {
		return nil, fmt.Errorf("listen address %q: %v", r.Listen, err)
	}
	if r.Advertise != "" {
		if err := checkAdvertise(r.Advertise); err != nil {
			return nil, fmt.Errorf("advertised address: %w", err)
		}
	}
	otherProps, err := r.resolveListeners(parseClientAuth)
	if err != nil {
		return nil, err
	}
	if r.HTTP != "" {
		if _, _, err := net.SplitHostPort(r.HTTP); err != nil {
			return nil, fmt.Errorf("http address %q: %v", r.HTTP, err)
		}
	}
	if r.NodeID < 0 {
		return nil, fmt.Errorf("node ID %d: must not be negative", r.NodeID)
	}
	if r.Nodes == 0 {
		r.Nodes = 1
	}
	if r.Nodes < 0 || int64(r.NodeID)+int64(r.Nodes)-1 > math.MaxInt32 {
		return nil, fmt.Errorf("nodes %d: must be at least 1, with node IDs up to %d", r.Nodes, math.MaxInt32)
	}
	if err := r.checkNodePorts(); err != nil {
		return nil, err
	}
	if r.ClusterID == "" {
		r.ClusterID = DefaultClusterID
	}
	if r.Values, err = newProps(otherProps); err != nil {
		return nil, err
	}
	if err := checkConnections(r.Values); err != nil {
		return nil, err
	}
	if err := r.resolveDataDir(); err != nil {
		return nil, err
	}
	if r.Share, err = shareConfig(r.Values); err != nil {
		return nil, err
	}
	return r, nil
}

// propClientAuth is Kafka's ssl.client.auth (auth.PropClientAuth).
const propClientAuth = "ssl.client.auth"

// resolveListeners fills r.Listeners from the listener properties or from
// Listen and Advertise, checks them, and returns the other properties.
func (r *Resolved) resolveListeners(parseClientAuth func(string) (string, error)) (map[string]string, error) {
	props := maps.Clone(r.Props)
	var err error
	if r.ClientAuth, err = parseClientAuth(props[propClientAuth]); err != nil {
		return nil, err
	}
	delete(props, propClientAuth)
	controllers, err := r.takeKRaftProperties(props)
	if err != nil {
		return nil, err
	}
	var given bool
	var values [3]string
	for i, name := range []string{propListeners, propAdvertisedListeners, propProtocolMap} {
		if v, ok := props[name]; ok {
			// controller-listener-skipped: a KRaft controller listener is
			// neither opened nor advertised.
			values[i], given = dropListeners(v, controllers), true
			delete(props, name)
		}
	}
	if len(r.Listeners) > 0 && given {
		return nil, fmt.Errorf("listeners are set both in Config.Listeners and by the properties %s, %s and %s: set one", propListeners, propAdvertisedListeners, propProtocolMap)
	}
	if strings.TrimSpace(r.Props[propListeners]) != "" && strings.TrimSpace(values[0]) == "" {
		return nil, fmt.Errorf("%s %q: every listener is a controller listener (%s); clients need one more", propListeners, r.Props[propListeners], propControllerListenerNames)
	}
	if len(r.Listeners) == 0 {
		ls, err := ParseListeners(values[0], values[1], values[2], r.Listen)
		if err != nil {
			return nil, err
		}
		if values[0] == "" && values[1] == "" {
			ls[0].Advertise = r.Advertise
		}
		r.Listeners = ls
	}
	names := make(map[string]bool)
	for _, l := range r.Listeners {
		if l.Name == "" || names[l.Name] {
			return nil, fmt.Errorf("listener name %q: empty or used twice", l.Name)
		}
		names[l.Name] = true
		if _, _, err := net.SplitHostPort(l.Listen); err != nil {
			return nil, fmt.Errorf("listener %s: listen address %q: %v", l.Name, l.Listen, err)
		}
		if l.Advertise != "" {
			if err := checkAdvertise(l.Advertise); err != nil {
				return nil, fmt.Errorf("listener %s: advertised address: %w", l.Name, err)
			}
		}
	}
	return props, nil
}

// checkNodePorts checks that every node's listen and advertised ports,
// the configured port + node index, are ports.
func (r *Resolved) checkNodePorts() error {
	for _, l := range r.Listeners {
		for _, addr := range []string{l.Listen, l.Advertise} {
			if addr == "" {
				continue
			}
			if _, err := NodeAddr(addr, r.Nodes-1); err != nil {
				return fmt.Errorf("listener %s with %d nodes: %w", l.Name, r.Nodes, err)
			}
		}
	}
	return nil
}

// NodeAddr is addr for node index i: its port + i, or port 0 (a free
// port) for port 0.
func NodeAddr(addr string, i int) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return "", fmt.Errorf("port %q: %v", port, err)
	}
	if n == 0 || i == 0 {
		return addr, nil
	}
	if n+i > math.MaxUint16 {
		return "", fmt.Errorf("port %d + node index %d is above 65535", n, i)
	}
	return net.JoinHostPort(host, strconv.Itoa(n+i)), nil
}

// propLogDirs is Kafka's name for the data directory.
const propLogDirs = "log.dirs"

// resolveDataDir reconciles Settings.DataDir with log.dirs (one-data-dir,
// data-dir-one-node) and reports the result as log.dirs.
func (r *Resolved) resolveDataDir() error {
	prop := r.Values[propLogDirs]
	dirs := configdef.SplitList(prop)
	switch {
	case len(dirs) > 1:
		return fmt.Errorf("%s %q names %d directories: sharebroker keeps one data directory", propLogDirs, prop, len(dirs))
	case len(dirs) == 1 && r.DataDir != "" && filepath.Clean(dirs[0]) != filepath.Clean(r.DataDir):
		return fmt.Errorf("data directory set twice: %s, and %s %s", r.DataDir, propLogDirs, dirs[0])
	case len(dirs) == 1:
		r.DataDir = dirs[0]
	}
	r.Values[propLogDirs] = r.DataDir
	if r.DataDir != "" && r.Nodes > 1 {
		return fmt.Errorf("data directory %s with %d nodes: a data directory needs a single node for now", r.DataDir, r.Nodes)
	}
	return nil
}
