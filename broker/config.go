package broker

import (
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sharebroker/sharebroker/auth"
	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/locktimer"
)

// DefaultListen is where the broker listens unless told otherwise.
const DefaultListen = "127.0.0.1:9092"

// DefaultHTTP is where the command's HTTP server (metrics, health,
// inspection) listens unless told otherwise. An embedded broker has no HTTP
// server unless Config.HTTP is set.
const DefaultHTTP = "127.0.0.1:9644"

// DefaultClusterID is the cluster ID reported when none is configured. It is
// stable so that clients that cache it see the same cluster across restarts.
const DefaultClusterID = "sharebroker-cluster-0001"

// Config is everything a Broker needs. The zero value of every field has a
// usable default, so an embedding test can start a broker with
// Config{Listen: "127.0.0.1:0"}.
type Config struct {
	// Listen is the TCP address of the Kafka listener. Port 0 picks a free
	// port; Broker.Addr reports it.
	Listen string
	// Advertise is the host:port clients are told to connect to. Empty
	// means the listener's address, with "localhost" for an unspecified host.
	Advertise string
	// Listeners, when set, replaces Listen and Advertise with several named
	// listeners, each advertising its own address (listeners.go). The Kafka
	// properties listeners, advertised.listeners and
	// listener.security.protocol.map in Props do the same; set one or the
	// other.
	Listeners []ListenerConfig
	// TLS configures the SSL and SASL_SSL listeners (package auth): their certificate, and
	// the client CA for ssl.client.auth. Unused without such a listener.
	TLS TLSConfig
	// SASLUsers are the users of the SASL listeners (package auth), each
	// able to authenticate with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512,
	// as --sasl-user NAME:PASSWORD gives them.
	SASLUsers []SASLUser
	// NodeID is this broker's node ID in Metadata: the ID of the first
	// node when Nodes is above 1.
	NodeID int32
	// Nodes is how many nodes run in this process, with IDs NodeID to
	// NodeID+Nodes-1 (docs/cluster.md). Node i listens on each
	// listener's port + i (port 0: a free port each) and advertises its
	// advertised port + i. Zero means 1: one node, as a single broker.
	Nodes int
	// ClusterID is reported in Metadata and DescribeCluster.
	ClusterID string
	// Props are Kafka property overrides by name (as --config key=value).
	// Unknown names and invalid values make New fail.
	Props map[string]string
	// Logger receives the broker's logs. Nil discards them.
	Logger *slog.Logger
	// Clock is the broker's time. Nil means the real clock, or with
	// EnableTestAPI a locktimer.OffsetClock (real time that the test API
	// can advance).
	Clock locktimer.Clock
	// HTTP is the address of the HTTP server: /metrics, /healthz, /readyz
	// and the /v1 inspection API. Empty means no HTTP server; port 0 picks
	// a free port, which Broker.HTTPAddr reports.
	HTTP string
	// EnableTestAPI adds the test-control endpoints under /v1/test/ to the
	// HTTP server (POST /v1/test/clock/advance, /v1/test/faults). Without it
	// they are 404.
	// Advancing needs a clock with an Advance method (OffsetClock,
	// ManualClock).
	EnableTestAPI bool
	// Registry receives the broker's metrics. Nil means a registry of the
	// broker's own; never the global one.
	Registry *prometheus.Registry
	// DataDir, when set, keeps topics and records in that directory so
	// they survive a restart (docs/durability.md); the Kafka property
	// log.dirs does the same. Empty keeps everything in memory.
	DataDir string

	// newMemberID, nil outside tests, makes the member IDs of classic and
	// KIP-848 groups instead of random UUIDs, so that a fuzz input can name
	// the member a JoinGroup made.
	newMemberID func() string
}

// resolved is a validated Config with defaults applied.
type resolved struct {
	Config
	props brokerProps
	share group.ShareConfig
	// ownRegistry: Registry was made here, so only the broker reads it.
	ownRegistry bool
	// clientAuth is ssl.client.auth: none, requested or required.
	clientAuth string
	// beforeRecover, nil outside tests, runs in Start after the HTTP
	// server is up and before recovery begins.
	beforeRecover func()
}

func (c Config) resolve() (*resolved, error) {
	r := &resolved{Config: c}
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
	otherProps, err := r.resolveListeners()
	if err != nil {
		return nil, err
	}
	if r.HTTP != "" {
		if _, _, err := net.SplitHostPort(r.HTTP); err != nil {
			return nil, fmt.Errorf("http address %q: %v", r.HTTP, err)
		}
	}
	if r.Registry == nil {
		r.Registry = prometheus.NewRegistry()
		r.ownRegistry = true
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
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	if r.Clock == nil {
		if r.EnableTestAPI {
			r.Clock = locktimer.NewOffsetClock()
		} else {
			r.Clock = locktimer.RealClock{}
		}
	}
	props, err := newBrokerProps(otherProps)
	if err != nil {
		return nil, err
	}
	r.props = props
	if err := r.resolveDataDir(); err != nil {
		return nil, err
	}
	if r.share, err = shareConfig(props); err != nil {
		return nil, err
	}
	return r, nil
}

// resolveListeners fills r.Listeners from the listener properties or from
// Listen and Advertise, checks them, and returns the other properties.
func (r *resolved) resolveListeners() (map[string]string, error) {
	props := maps.Clone(r.Props)
	var err error
	if r.clientAuth, err = auth.ParseClientAuth(props[auth.PropClientAuth]); err != nil {
		return nil, err
	}
	delete(props, auth.PropClientAuth)
	var given bool
	var values [3]string
	for i, name := range []string{propListeners, propAdvertisedListeners, propProtocolMap} {
		if v, ok := props[name]; ok {
			values[i], given = v, true
			delete(props, name)
		}
	}
	if len(r.Listeners) > 0 && given {
		return nil, fmt.Errorf("listeners are set both in Config.Listeners and by the properties %s, %s and %s: set one", propListeners, propAdvertisedListeners, propProtocolMap)
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
func (r *resolved) checkNodePorts() error {
	for _, l := range r.Listeners {
		for _, addr := range []string{l.Listen, l.Advertise} {
			if addr == "" {
				continue
			}
			if _, err := nodeAddr(addr, r.Nodes-1); err != nil {
				return fmt.Errorf("listener %s with %d nodes: %w", l.Name, r.Nodes, err)
			}
		}
	}
	return nil
}

// nodeAddr is addr for node index i: its port + i, or port 0 (a free
// port) for port 0.
func nodeAddr(addr string, i int) (string, error) {
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
