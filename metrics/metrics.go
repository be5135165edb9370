// Package metrics owns the broker's Prometheus registry: every metric's
// name, help text and labels, the node label of each node, the counters
// the request path adds to, and the collectors that read the broker's
// state when the registry is scraped.
//
// The request path pays atomic adds only: series it counts into are made
// once and found again without allocating, and figures that describe state
// (connections, share partitions' windows, sessions, groups) are read at
// scrape time through State, under the locks of the structures that hold
// them. The package sees no wire types and no sockets: the broker turns a
// response into its error_code label and a read error into its reason
// before counting them (docs/design.md, "The layering rule").
package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/clientmetrics"
	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/storage"
)

// Error-code label values that are not a Kafka code (README "Metrics").
const (
	// CodeMixed: the response carries more than one distinct non-zero code
	// (a Produce answering two partitions with different errors).
	CodeMixed = "mixed"
	// CodeClosed: no response was sent; the handler closed the connection
	// (a broken conversation or a recovered panic).
	CodeClosed = "closed"
)

// Reasons a frame was refused and its connection closed: the reason label
// of sharebroker_frames_rejected_total.
const (
	RejectTooLarge     = "too_large"
	RejectBadSize      = "bad_size"
	RejectHTTP         = "http_on_kafka_port"
	RejectTLS          = "tls_on_plaintext_port"
	RejectTruncated    = "truncated"
	RejectBadHeader    = "malformed_header"
	RejectNotServed    = "unsupported_api_or_version"
	RejectBadBody      = "malformed_body"
	RejectOtherReadErr = "read_error"
)

var rejectReasons = []string{RejectTooLarge, RejectBadSize, RejectHTTP, RejectTLS, RejectTruncated,
	RejectBadHeader, RejectNotServed, RejectBadBody, RejectOtherReadErr}

// Label values of sharebroker_sasl_authentications_total. The mechanism
// label is an enabled mechanism or MechUnsupported, never what a client
// sent, so its values are bounded.
const (
	resultSuccess   = "success"
	resultFailure   = "failure"
	MechUnsupported = "unsupported"
)

// State is what the collectors read of the broker at scrape time; the
// broker implements it. No method is called on the request path, and each
// reads under the locks of what it reads.
type State interface {
	// Connections calls count with the node ID of each open client
	// connection.
	Connections(count func(node int32))
	// LockTimers is the number of live acquisition-lock timers.
	LockTimers() int
	// ShareCounters are the counters every share partition adds to.
	ShareCounters() *sharepartition.Counters
	// SharePartitions calls each with every share partition whose topic
	// exists.
	SharePartitions(each func(SharePartition))
	// ShareSessions is the share-session cache of node.
	ShareSessions(node int32) SessionCache
	// FetchSessions is the Fetch-session cache (KIP-227) of node.
	FetchSessions(node int32) SessionCache
	// ShareGroups calls each with the state of every share group.
	ShareGroups(each func(group.ShareGroupState))
	// ShareRebalances is the number of share group epoch bumps.
	ShareRebalances() int64
	// TopicName is the name of the topic id, false once it is deleted.
	TopicName(id storage.TopicID) (string, bool)
	// DeadLetters calls written with the dead-letter records written per
	// group and reason, and dropped with the dead letters not written per
	// cause (DeadLetterDropCauses).
	DeadLetters(written func(group string, reason sharepartition.DeadLetterReason, n int64), dropped func(cause int, n int64))
}

// SharePartition is one share partition's figures as a scrape reads them.
type SharePartition struct {
	Group     string
	Topic     string // the topic's name
	Partition int32
	Stats     sharepartition.Stats
	// FetchLockTime and FetchLockRatio are Kafka's FetchLockTimeMs (in
	// seconds) and FetchLockRatio of the partition's fetch passes.
	FetchLockTime, FetchLockRatio Histogram
}

// Histogram is a histogram kept outside Prometheus: per-bucket counts,
// not cumulative, the last one counting what lies above the last bound.
type Histogram struct {
	Bounds []float64
	Counts []uint64 // len(Bounds)+1
	Sum    float64
}

// SessionCache is one node's cache of share sessions or of Fetch
// sessions as metrics see it.
type SessionCache struct {
	Sessions   int // open sessions
	Partitions int // partitions across them, each session's counted
	// Evictions are the sessions the cache removed: a share session's
	// connection closed; a Fetch session made room for another.
	Evictions int64
}

// Config is what New needs: the registry, the nodes, and what fill shows
// at zero before anything is counted.
type Config struct {
	// Registry receives the metrics; never the global one, so parallel
	// tests read their own values.
	Registry *prometheus.Registry
	// Lazy says the broker made Registry itself, so nothing can read it
	// but through Registry or Gather, and filling it waits for them.
	Lazy bool
	// FirstNode is the ID of the first of Nodes nodes, numbered on.
	FirstNode int32
	Nodes     int
	// APIs are the names of the APIs served, shown at error code 0.
	APIs []string
	// Authorizer says an authorizer decides requests: denials are shown
	// at zero for every resource type.
	Authorizer bool
	// SASLMechanisms are the enabled mechanisms when a listener uses SASL
	// (nil otherwise), shown at zero for success and failure.
	SASLMechanisms []string
	// State is what the collectors read at scrape time.
	State State
	// Clients are the metrics clients push through KIP-714 telemetry,
	// shown at scrape time (clients.go); nil, as with telemetry off,
	// registers nothing and costs nothing.
	Clients *clientmetrics.Store
}

// Metrics is one broker's Prometheus instruments, on its own registry.
type Metrics struct {
	reg            *prometheus.Registry
	requests       *prometheus.CounterVec
	duration       *prometheus.HistogramVec
	framesRejected *prometheus.CounterVec
	saslAuths      *prometheus.CounterVec
	denials        *prometheus.CounterVec
	panics         prometheus.Counter
	fireDelay      prometheus.Histogram
	delivery       deliveryCounts
	share          *shareMetrics // share.go
	// nodes holds the node label of each node, by ID minus the first ID:
	// made once, so the request path labels without allocating.
	nodes     []string
	firstNode int32

	cfg    Config    // read by fill and the collectors
	filled sync.Once // fill has run
}

// New makes the instruments the request path counts with. Filling the
// registry — the Go and process collectors, the gauges, the series every
// scrape shows at zero — is left to the first reader of the registry
// (Registry, Gather) when cfg.Lazy: nothing else can read it, and filling
// it took 0.3–0.45 ms of a 6 ms start, most of it the Go collector, before
// the Kafka listener was bound. A registry the caller supplied is filled
// at once, because the caller may gather from it without asking.
func New(cfg Config) *Metrics {
	m := &Metrics{
		reg:       cfg.Registry,
		cfg:       cfg,
		nodes:     nodeLabels(cfg.FirstNode, cfg.Nodes),
		firstNode: cfg.FirstNode,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sharebroker_requests_total",
			Help: "Requests answered, by API, response error code (\"mixed\": several distinct codes; \"closed\": the connection was closed instead) and the node the request came to.",
		}, []string{"api", "error_code", "node"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sharebroker_request_duration_seconds",
			Help:    "Time from a decoded request to its response, long-poll waits included, by API and the node the request came to.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10), // 100µs to 26s
		}, []string{"api", "node"}),
		framesRejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sharebroker_frames_rejected_total",
			Help: "Request frames refused with the connection closed, by reason and the node the frame came to.",
		}, []string{"reason", "node"}),
		saslAuths: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sharebroker_sasl_authentications_total",
			Help: "SASL authentications and re-authentications, by mechanism (\"unsupported\": the handshake named a mechanism not enabled), result (success or failure) and the node the connection came to.",
		}, []string{"mechanism", "result", "node"}),
		denials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sharebroker_authorization_denials_total",
			Help: "Operations the authorizer refused on a resource a request named, by resource type (TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER) and the node the request came to.",
		}, []string{"resource_type", "node"}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sharebroker_panics_recovered_total",
			Help: "Handler panics recovered (each closed one connection).",
		}),
		fireDelay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sharebroker_locktimer_fire_delay_seconds",
			Help:    "How late acquisition-lock timers fired after their deadline, on the broker clock.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 8),
		}),
	}
	m.share = newShareMetrics(len(m.nodes))
	if !cfg.Lazy {
		m.Registry()
	}
	return m
}

// nodeLabels is the node label of each of n nodes from first on.
func nodeLabels(first int32, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(int(first) + i)
	}
	return out
}

// Node is the node label of node id.
func (m *Metrics) Node(id int32) string {
	if i := int(id - m.firstNode); i >= 0 && i < len(m.nodes) {
		return m.nodes[i]
	}
	return strconv.Itoa(int(id)) // not a node of the cluster: never happens
}

// Registry returns the broker's registry, filled.
func (m *Metrics) Registry() *prometheus.Registry {
	m.filled.Do(m.fill)
	return m.reg
}

// Gather fills the registry if nothing has yet and gathers it, so a
// scrape handler built on m (a prometheus.Gatherer) leaves the filling to
// the first scrape.
func (m *Metrics) Gather() ([]*dto.MetricFamily, error) { return m.Registry().Gather() }

// fill registers every collector on m.reg and creates the series a scrape
// shows before anything is counted. Series the request path made in the
// meantime are kept: WithLabelValues returns an existing series.
func (m *Metrics) fill() {
	cfg := &m.cfg
	for _, node := range m.nodes { // N small: N times the series of one node
		for _, r := range rejectReasons {
			m.framesRejected.WithLabelValues(r, node)
		}
		if cfg.Authorizer {
			for t := acl.ResourceTopic; t < acl.NumResourceTypes; t++ {
				m.denials.WithLabelValues(t.String(), node)
			}
		}
		for _, api := range cfg.APIs {
			m.requests.WithLabelValues(api, "0", node)
		}
		for _, mech := range cfg.SASLMechanisms {
			m.saslAuths.WithLabelValues(mech, resultSuccess, node)
			m.saslAuths.WithLabelValues(mech, resultFailure, node)
		}
	}
	m.reg.MustRegister(
		// The collectors package's constructors are these two, wrapped;
		// calling them here keeps that package, its init (five regexps)
		// and database/sql out of the binary, which starts faster without.
		//lint:ignore SA1019 same collector as collectors.NewGoCollector
		prometheus.NewGoCollector(),
		//lint:ignore SA1019 same collector as collectors.NewProcessCollector
		prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}),
		m.requests, m.duration, m.framesRejected, m.saslAuths, m.denials, m.panics, m.fireDelay,
		&connCollector{m: m},
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sharebroker_locktimer_timers",
			Help: "Live acquisition-lock timers.",
		}, func() float64 { return float64(cfg.State.LockTimers()) }),
		&shareCollector{m: m},
		&deadLetterCollector{m: m},
		&kafkaShareCollector{m: m},
		&fetchSessionCollector{m: m},
	)
	if cfg.Clients != nil {
		m.reg.MustRegister(&clientCollector{store: cfg.Clients})
	}
}

// Request counts one answered request and its handling time: api is the
// API's name, code its error_code label (a Kafka code, CodeMixed or
// CodeClosed), node the label of the node it came to (Node).
func (m *Metrics) Request(node, api, code string, start time.Time) {
	m.requests.WithLabelValues(api, code, node).Inc()
	m.duration.WithLabelValues(api, node).Observe(time.Since(start).Seconds())
}

// Delivered counts records handed out by ShareFetch at one delivery count.
func (m *Metrics) Delivered(count int16, records int64) { m.delivery.observe(count, records) }

// SASLAuth counts one SASL authentication's outcome; mech is an enabled
// mechanism or MechUnsupported.
func (m *Metrics) SASLAuth(mech string, ok bool, node string) {
	result := resultFailure
	if ok {
		result = resultSuccess
	}
	m.saslAuths.WithLabelValues(mech, result, node).Inc()
}

// RejectFrame counts a frame refused for reason (a Reject constant) on the
// node labelled node.
func (m *Metrics) RejectFrame(reason, node string) {
	m.framesRejected.WithLabelValues(reason, node).Inc()
}

// Denied counts an authorization denial on a resource of type t on the
// node labelled node. The label values are the six resource types.
func (m *Metrics) Denied(t acl.ResourceType, node string) {
	m.denials.WithLabelValues(t.String(), node).Inc()
}

// Panics is the counter of handler panics recovered.
func (m *Metrics) Panics() prometheus.Counter { return m.panics }

// FireDelay records how late an acquisition-lock timer fired.
func (m *Metrics) FireDelay(late time.Duration) { m.fireDelay.Observe(late.Seconds()) }

// descConnections is the open connections gauge, one series per node.
var descConnections = prometheus.NewDesc("sharebroker_connections",
	"Open client connections, by the node they came to.", []string{"node"}, nil)

// connCollector exports the open connections of each node, every node
// listed (a stopped node has none).
type connCollector struct{ m *Metrics }

func (c *connCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descConnections }

func (c *connCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	counts := make([]int, len(m.nodes))
	m.cfg.State.Connections(func(node int32) {
		if i := int(node - m.firstNode); i >= 0 && i < len(counts) {
			counts[i]++
		}
	})
	for i, n := range counts {
		ch <- prometheus.MustNewConstMetric(descConnections, prometheus.GaugeValue, float64(n), m.nodes[i])
	}
}
