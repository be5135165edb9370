package broker

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

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
	// NodeID is this broker's node ID in Metadata.
	NodeID int32
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
	// HTTP server (POST /v1/test/clock/advance, /v1/test/faults). Without
	// them they are 404.
	// Advancing needs a clock with an Advance method (OffsetClock,
	// ManualClock).
	EnableTestAPI bool
	// Registry receives the broker's metrics. Nil means a registry of the
	// broker's own; never the global one.
	Registry *prometheus.Registry
}

// resolved is a validated Config with defaults applied.
type resolved struct {
	Config
	props brokerProps
	share group.ShareConfig
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
		host, port, err := net.SplitHostPort(r.Advertise)
		if err != nil {
			return nil, fmt.Errorf("advertised address %q: %v", r.Advertise, err)
		}
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 || host == "" {
			return nil, fmt.Errorf("advertised address %q: want host:port with a port from 1 to 65535", r.Advertise)
		}
	}
	if r.HTTP != "" {
		if _, _, err := net.SplitHostPort(r.HTTP); err != nil {
			return nil, fmt.Errorf("http address %q: %v", r.HTTP, err)
		}
	}
	if r.Registry == nil {
		r.Registry = prometheus.NewRegistry()
	}
	if r.NodeID < 0 {
		return nil, fmt.Errorf("node ID %d: must not be negative", r.NodeID)
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
	props, err := newBrokerProps(c.Props)
	if err != nil {
		return nil, err
	}
	r.props = props
	if r.share, err = shareConfig(props); err != nil {
		return nil, err
	}
	return r, nil
}
