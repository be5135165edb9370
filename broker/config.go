package broker

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sharebroker/sharebroker/auth"
	"github.com/sharebroker/sharebroker/brokerconfig"
	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/locktimer"
	"github.com/sharebroker/sharebroker/telemetry"
)

// The broker's configuration is package brokerconfig's: the property
// table, the checks and defaults of what is given at start, the resolved
// values. Config stays here because it also carries what the edge alone
// uses (TLS files, SASL users, a Prometheus registry), whose types reach
// package net; resolve hands the rest to brokerconfig.Resolve.

// DefaultListen is where the broker listens unless told otherwise.
const DefaultListen = brokerconfig.DefaultListen

// DefaultHTTP is where the command's HTTP server (metrics, health,
// inspection) listens unless told otherwise. An embedded broker has no HTTP
// server unless Config.HTTP is set.
const DefaultHTTP = brokerconfig.DefaultHTTP

// DefaultClusterID is the cluster ID reported when none is configured. It is
// stable so that clients that cache it see the same cluster across restarts.
const DefaultClusterID = brokerconfig.DefaultClusterID

// ListenerConfig is one named Kafka listener.
type ListenerConfig = brokerconfig.Listener

// ParseListeners turns Kafka's three listener properties into listener
// configs. listen is the address of the single listener used when
// listeners is empty.
func ParseListeners(listeners, advertised, protocolMap, listen string) ([]ListenerConfig, error) {
	return brokerconfig.ParseListeners(listeners, advertised, protocolMap, listen)
}

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
	// listeners, each advertising its own address (package brokerconfig). The Kafka
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
	// HTTPToken, when set, must come as "Authorization: Bearer <token>"
	// on every HTTP path but /healthz, /readyz, the console's static
	// pages and, with HTTPMetricsPublic, /metrics (httpapi.Config.Token;
	// docs/security.md, "Who may reach the HTTP listener").
	HTTPToken string
	// HTTPMetricsPublic serves /metrics without HTTPToken.
	HTTPMetricsPublic bool
	// HTTPMaxConnections caps the HTTP listener's connections; zero
	// means httpapi.DefaultMaxConnections.
	HTTPMaxConnections int
	// Registry receives the broker's metrics. Nil means a registry of the
	// broker's own; never the global one.
	Registry *prometheus.Registry
	// DataDir, when set, keeps topics and records in that directory so
	// they survive a restart (docs/durability.md); the Kafka property
	// log.dirs does the same. Empty keeps everything in memory.
	DataDir string
	// Telemetry are the hooks client telemetry (KIP-714) calls: its
	// Receiver gets each accepted PushTelemetry's metrics, decompressed
	// (docs/telemetry.md). Nil hooks drop them.
	Telemetry telemetry.Hooks
	// Seed is the state made at start, after the data directory is
	// recovered and before the Kafka listeners bind: topics, GROUP
	// configs, SCRAM users, ACLs (package seed, docs/seeding.md).
	Seed Seed

	// newMemberID, nil outside tests, makes the member IDs of classic and
	// KIP-848 groups instead of random UUIDs, so that a fuzz input can name
	// the member a JoinGroup made.
	newMemberID func() string
}

// resolved is a validated Config with defaults applied.
type resolved struct {
	Config
	props brokerconfig.Props
	share group.ShareConfig
	// ownRegistry: Registry was made here, so only the broker reads it.
	ownRegistry bool
	// clientAuth is ssl.client.auth: none, requested or required.
	clientAuth string
	// ignored are the Kafka properties accepted and not used, which New
	// logs once each (brokerconfig: kraft-ignored-logged).
	ignored []brokerconfig.IgnoredProperty
	// beforeRecover, nil outside tests, runs in Start after the HTTP
	// server is up and before recovery begins.
	beforeRecover func()
	// beforeSeed, nil outside tests, runs in Start after the HTTP server
	// is up and before the seed is applied.
	beforeSeed func()
	// topicDefaults describes the topic properties of a topic without
	// overrides (topic_config.go).
	topicDefaults topicDefaults
}

// resolve checks c with brokerconfig.Resolve, which also parses the
// properties, and fills in the defaults that are the edge's own. Those
// cannot fail, so the first mistake is reported as it always was.
func (c Config) resolve() (*resolved, error) {
	s, err := brokerconfig.Resolve(brokerconfig.Settings{
		Listen: c.Listen, Advertise: c.Advertise, Listeners: c.Listeners, HTTP: c.HTTP,
		NodeID: c.NodeID, Nodes: c.Nodes, ClusterID: c.ClusterID, Props: c.Props, DataDir: c.DataDir,
	}, auth.ParseClientAuth)
	if err != nil {
		return nil, err
	}
	r := &resolved{Config: c, props: s.Values, share: s.Share, clientAuth: s.ClientAuth, ignored: s.Ignored}
	r.Listen, r.Listeners, r.Nodes, r.ClusterID, r.DataDir, r.NodeID = s.Listen, s.Listeners, s.Nodes, s.ClusterID, s.DataDir, s.NodeID
	if r.Registry == nil {
		r.Registry = prometheus.NewRegistry()
		r.ownRegistry = true
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
	return r, nil
}
