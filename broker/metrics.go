package broker

import (
	"errors"
	"io"
	"net"
	"os"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/wire"
)

// Error-code label values that are not a Kafka code (README "Metrics").
const (
	// codeMixed: the response carries more than one distinct non-zero code
	// (a Produce answering two partitions with different errors).
	codeMixed = "mixed"
	// codeClosed: no response was sent; the handler closed the connection
	// (a broken conversation or a recovered panic).
	codeClosed = "closed"
)

// Reasons a frame was refused and its connection closed.
const (
	rejectTooLarge     = "too_large"
	rejectBadSize      = "bad_size"
	rejectHTTP         = "http_on_kafka_port"
	rejectTLS          = "tls_on_plaintext_port"
	rejectTruncated    = "truncated"
	rejectBadHeader    = "malformed_header"
	rejectNotServed    = "unsupported_api_or_version"
	rejectBadBody      = "malformed_body"
	rejectOtherReadErr = "read_error"
)

var rejectReasons = []string{rejectTooLarge, rejectBadSize, rejectHTTP, rejectTLS, rejectTruncated,
	rejectBadHeader, rejectNotServed, rejectBadBody, rejectOtherReadErr}

// ackTypeLabels names the acknowledgement types counted by
// share_records_acknowledged_total: Kafka's ackType values, lower case,
// and gap, which Kafka does not count.
var ackTypeLabels = map[sharepartition.AckType]string{
	sharepartition.AckGap:     "gap",
	sharepartition.AckAccept:  "accept",
	sharepartition.AckRelease: "release",
	sharepartition.AckReject:  "reject",
	sharepartition.AckRenew:   "renew",
}

var archiveReasonLabels = [sharepartition.NumArchiveReasons]string{
	sharepartition.ArchivedRejected:      "rejected",
	sharepartition.ArchivedDeliveryLimit: "delivery_limit",
	sharepartition.ArchivedLogStart:      "log_start",
	sharepartition.ArchivedCompacted:     "compacted",
	sharepartition.ArchivedAborted:       "aborted",
}

// metrics is one broker's Prometheus instruments, registered on its own
// registry (never the global one), so parallel tests read their own values.
type metrics struct {
	reg            *prometheus.Registry
	requests       *prometheus.CounterVec
	duration       *prometheus.HistogramVec
	framesRejected *prometheus.CounterVec
	saslAuths      *prometheus.CounterVec
	denials        *prometheus.CounterVec
	panics         prometheus.Counter
	fireDelay      prometheus.Histogram
	delivery       deliveryCounts
	share          *shareMetrics // share_metrics.go
	// nodes holds the node label of each node, by ID minus the first ID:
	// made once, so the request path labels without allocating.
	nodes     []string
	firstNode int32

	b      *Broker   // read by the gauges and the share collector
	filled sync.Once // fill has run
}

// newMetrics makes the instruments the request path counts with. Filling
// the registry — the Go and process collectors, the gauges, the series
// every scrape shows at zero — is left to the first reader of the registry
// (registry) when the broker made the registry itself: nothing else can
// read it, and filling it took 0.3–0.45 ms of a 6 ms start, most of it
// the Go collector, before the Kafka listener was bound. A registry the
// caller supplied is filled at once, because the caller may gather from it
// without asking the broker.
func newMetrics(b *Broker, reg *prometheus.Registry, own bool) *metrics {
	m := &metrics{
		reg:       reg,
		b:         b,
		nodes:     nodeLabels(b.cfg.NodeID, b.cfg.Nodes),
		firstNode: b.cfg.NodeID,
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
	if !own {
		m.registry()
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

// node is the node label of node id.
func (m *metrics) node(id int32) string {
	if i := int(id - m.firstNode); i >= 0 && i < len(m.nodes) {
		return m.nodes[i]
	}
	return strconv.Itoa(int(id)) // not a node of the cluster: never happens
}

// registry returns the broker's registry, filled.
func (m *metrics) registry() *prometheus.Registry {
	m.filled.Do(m.fill)
	return m.reg
}

// fill registers every collector on m.reg and creates the series a scrape
// shows before anything is counted. Series the request path made in the
// meantime are kept: WithLabelValues returns an existing series.
func (m *metrics) fill() {
	b := m.b
	for _, node := range m.nodes { // N small: N times the series of one node
		for _, r := range rejectReasons {
			m.framesRejected.WithLabelValues(r, node)
		}
		if b.authz != nil {
			for t := acl.ResourceTopic; t < acl.NumResourceTypes; t++ {
				m.denials.WithLabelValues(t.String(), node)
			}
		}
		for _, a := range apis {
			if a != nil {
				m.requests.WithLabelValues(kmsg.NameForKey(a.key), "0", node)
			}
		}
		if b.hasSASLListener() {
			for _, mech := range b.authn.Mechanisms() {
				m.saslAuths.WithLabelValues(mech, resultSuccess, node)
				m.saslAuths.WithLabelValues(mech, resultFailure, node)
			}
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
		&connCollector{b: b},
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sharebroker_locktimer_timers",
			Help: "Live acquisition-lock timers.",
		}, func() float64 { return float64(b.shares.LockTimers()) }),
		&shareCollector{b: b},
		b.deadLetters,
		&kafkaShareCollector{b: b},
	)
}

// request counts one answered request and its handling time; node is the
// label of the node it came to (metrics.node).
func (m *metrics) request(node string, key int16, resp kmsg.Response, err error, start time.Time) {
	api := kmsg.NameForKey(key)
	code := codeClosed
	if err == nil {
		code = responseCode(resp)
	}
	m.requests.WithLabelValues(api, code, node).Inc()
	m.duration.WithLabelValues(api, node).Observe(time.Since(start).Seconds())
	if fr, ok := resp.(*shareFetchResponse); ok {
		for i := range fr.Topics {
			for j := range fr.Topics[i].Partitions {
				for _, ar := range fr.Topics[i].Partitions[j].AcquiredRecords {
					m.delivery.observe(ar.DeliveryCount, ar.LastOffset-ar.FirstOffset+1)
				}
			}
		}
	}
}

// Label values of sharebroker_sasl_authentications_total. The mechanism
// label is an enabled mechanism or mechUnsupported, never what a client
// sent, so its values are bounded.
const (
	resultSuccess   = "success"
	resultFailure   = "failure"
	mechUnsupported = "unsupported"
)

// saslAuth counts one SASL authentication's outcome.
func (m *metrics) saslAuth(mech string, ok bool, node string) {
	result := resultFailure
	if ok {
		result = resultSuccess
	}
	m.saslAuths.WithLabelValues(mech, result, node).Inc()
}

// rejectFrame counts a frame refused for reason on the node labelled node.
func (m *metrics) rejectFrame(reason, node string) {
	m.framesRejected.WithLabelValues(reason, node).Inc()
}

// denied counts an authorization denial on a resource of type t on the
// node labelled node. The label values are the six resource types.
func (m *metrics) denied(t acl.ResourceType, node string) {
	m.denials.WithLabelValues(t.String(), node).Inc()
}

// descConnections is the open connections gauge, one series per node.
var descConnections = prometheus.NewDesc("sharebroker_connections",
	"Open client connections, by the node they came to.", []string{"node"}, nil)

// connCollector exports the open connections of each node, every node
// listed (a stopped node has none).
type connCollector struct{ b *Broker }

func (c *connCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descConnections }

func (c *connCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.b.metrics
	counts := make([]int, len(m.nodes))
	c.b.mu.Lock()
	for conn := range c.b.conns {
		if i := int(conn.node() - m.firstNode); i >= 0 && i < len(counts) {
			counts[i]++
		}
	}
	c.b.mu.Unlock()
	for i, n := range counts {
		ch <- prometheus.MustNewConstMetric(descConnections, prometheus.GaugeValue, float64(n), m.nodes[i])
	}
}

// readRejectReason classifies why reading a frame failed, or returns ""
// when the client simply went away or the broker is shutting down.
func readRejectReason(err error) string {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, os.ErrDeadlineExceeded):
		return ""
	case errors.Is(err, io.ErrUnexpectedEOF):
		return rejectTruncated
	case errors.Is(err, wire.ErrFrameTooLarge):
		return rejectTooLarge
	case errors.Is(err, wire.ErrFrameSize):
		return rejectBadSize
	case errors.Is(err, wire.ErrHTTPOnKafka):
		return rejectHTTP
	case errors.Is(err, wire.ErrTLSOnPlaintext):
		return rejectTLS
	}
	return rejectOtherReadErr
}

// responseCode is the error_code label of resp: "0" when every ErrorCode
// field in it is zero, the code when the non-zero ones all agree, else
// codeMixed. A nil response (Produce with acks=0) is "0".
func responseCode(resp kmsg.Response) string {
	if resp == nil {
		return "0"
	}
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return "0"
	}
	var s codeScan
	errorCodePlanOf(v.Elem().Type()).scan(v.Elem(), &s)
	switch {
	case s.mixed:
		return codeMixed
	case s.first == 0:
		return "0"
	}
	return strconv.Itoa(int(s.first))
}

// maxDeliveryBucket is the largest delivery count with its own bucket:
// group.share.delivery.count.limit is at most 10.
const maxDeliveryBucket = 10

// deliveryCounts is the histogram of the delivery count of every record
// handed out by ShareFetch. Prometheus histograms observe one value at a
// time; a batch of thousands of records shares one count, so the buckets
// are kept here, one atomic per count, and exported as a const histogram.
type deliveryCounts struct {
	byCount [maxDeliveryBucket + 2]atomic.Uint64 // index: count (0 unused), last: above the buckets
	sum     atomic.Uint64
}

func (d *deliveryCounts) observe(count int16, records int64) {
	if records <= 0 {
		return
	}
	i := int(count)
	if i < 0 {
		i = 0
	}
	if i > maxDeliveryBucket {
		i = maxDeliveryBucket + 1
	}
	d.byCount[i].Add(uint64(records))
	d.sum.Add(uint64(max(count, 0)) * uint64(records))
}

// deliveryBounds are the delivery count histogram's bucket bounds, 1 to
// maxDeliveryBucket.
var deliveryBounds = func() []float64 {
	b := make([]float64, maxDeliveryBucket)
	for i := range b {
		b[i] = float64(i + 1)
	}
	return b
}()

func (d *deliveryCounts) metric(desc *prometheus.Desc) prometheus.Metric {
	// counts[i] is the records at count i+1; a count below 1 (never sent)
	// joins bucket 1, as before, and the last slot is above the buckets.
	var counts [maxDeliveryBucket + 1]uint64
	for i := range d.byCount {
		counts[max(i-1, 0)] += d.byCount[i].Load()
	}
	return constHistogram(desc, deliveryBounds, counts[:], float64(d.sum.Load()), nil)
}

// shareCollector exports the share partitions' shared counters and the
// delivery count histogram; kafkaShareCollector the rest.
type shareCollector struct{ b *Broker }

var (
	descAcquired = prometheus.NewDesc("sharebroker_share_records_acquired_total",
		"Records acquired by share consumers.", nil, nil)
	descAcknowledged = prometheus.NewDesc("sharebroker_share_records_acknowledged_total",
		"Records acknowledged, by type (accept, release, reject, renew, gap) (Kafka's RecordAcknowledgementsPerSec).",
		[]string{"type"}, nil)
	descExpirations = prometheus.NewDesc("sharebroker_share_lock_expirations_total",
		"Records whose acquisition lock expired.", nil, nil)
	descArchived = prometheus.NewDesc("sharebroker_share_records_archived_total",
		"Records archived, by reason.", []string{"reason"}, nil)
	descMemberReleased = prometheus.NewDesc("sharebroker_share_records_released_on_close_total",
		"Records released because their member's share session closed or its connection dropped.", nil, nil)
	descLeaderMoved = prometheus.NewDesc("sharebroker_share_records_released_on_leader_move_total",
		"Records acquired on a node that lost its partition's leadership, freed for the new leader.", nil, nil)
	descSessions = prometheus.NewDesc("sharebroker_share_sessions",
		"Open share sessions, by node: each node keeps its own.", []string{"node"}, nil)
	descInFlight = prometheus.NewDesc("sharebroker_share_records_in_flight",
		"Records in a share partition's in-flight window (SPEO - SPSO + 1 when non-empty).",
		[]string{"group", "topic", "partition"}, nil)
	descDelivery = prometheus.NewDesc("sharebroker_share_delivery_count",
		"Delivery count of each record handed out by ShareFetch.", nil, nil)
)

func (c *shareCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descAcquired, descAcknowledged, descExpirations,
		descArchived, descMemberReleased, descLeaderMoved, descDelivery} {
		ch <- d
	}
}

func (c *shareCollector) Collect(ch chan<- prometheus.Metric) {
	ctr := c.b.shares.Counters()
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(descAcquired, ctr.Acquired.Load())
	for t, name := range ackTypeLabels {
		counter(descAcknowledged, ctr.Acknowledged[t].Load(), name)
	}
	counter(descExpirations, ctr.LockExpirations.Load())
	for r, name := range archiveReasonLabels {
		counter(descArchived, ctr.Archived[r].Load(), name)
	}
	counter(descMemberReleased, ctr.MemberReleased.Load())
	counter(descLeaderMoved, ctr.LeaderMoved.Load())
	ch <- c.b.metrics.delivery.metric(descDelivery)
}
