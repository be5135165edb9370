package metrics

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/storage"
)

// Kafka's share-group metrics (KIP-932, KIP-1103) by Prometheus names;
// share-groups.md §11 says what each means and when it counts, README
// maps each to its JMX name.
//
// Figures that describe state (windows, batches, sessions, groups) are
// read at scrape time from the structures that hold them, under their
// locks, so the request path pays nothing for them. What the request path
// counts (requests per topic, waiting and expired fetches) is atomic adds
// on counters made once per node and topic.
//
// Cardinality: a group/topic/partition series exists while the broker
// holds that share partition (it is dropped with its group or topic); a
// topic series exists while the topic does; node series number the nodes.

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

// shareMetrics is what the request path counts for the share metrics.
type shareMetrics struct {
	// topics counts ShareFetch and acknowledgement requests per node and
	// topic. Entries are made on first use and dropped by the scrape that
	// finds their topic gone.
	topicsMu sync.RWMutex
	topics   map[shareTopicKey]*shareTopicCounts
	// waits holds the delayed share fetches of each node, by node ID minus
	// the first node's ID (Metrics.nodes).
	waits []ShareWaits
}

type shareTopicKey struct {
	node  int32
	topic storage.TopicID
}

// shareTopicCounts are Kafka's per-topic BrokerTopicMetrics for share
// requests, as counters.
type shareTopicCounts struct {
	fetches, fetchesFailed atomic.Int64
	acks, acksFailed       atomic.Int64
}

// ShareWaits is one node's delayed share fetches: Kafka's share-fetch
// purgatory size and DelayedShareFetchMetrics ExpiresPerSec.
type ShareWaits struct {
	waiting atomic.Int64
	expired atomic.Int64
}

// Parked is the count of the node's ShareFetches waiting for records;
// share serving adds to it while a request is parked (Kafka's share-fetch
// purgatory size). The waits of no node (nil) count nothing.
func (w *ShareWaits) Parked() *atomic.Int64 {
	if w == nil {
		return nil
	}
	return &w.waiting
}

// Expired counts a parked ShareFetch whose MaxWaitMs ran out.
func (w *ShareWaits) Expired() { w.expired.Add(1) }

func newShareMetrics(nodes int) *shareMetrics {
	return &shareMetrics{topics: make(map[shareTopicKey]*shareTopicCounts), waits: make([]ShareWaits, nodes)}
}

// topic returns the counters of (node, id), making them on first use.
func (s *shareMetrics) topic(node int32, id storage.TopicID) *shareTopicCounts {
	k := shareTopicKey{node, id}
	s.topicsMu.RLock()
	c := s.topics[k]
	s.topicsMu.RUnlock()
	if c != nil {
		return c
	}
	s.topicsMu.Lock()
	defer s.topicsMu.Unlock()
	if c = s.topics[k]; c == nil {
		c = new(shareTopicCounts)
		s.topics[k] = c
	}
	return c
}

// WaitsOf returns node's delayed share fetch counters.
func (m *Metrics) WaitsOf(node int32) *ShareWaits {
	if i := int(node - m.firstNode); i >= 0 && i < len(m.share.waits) {
		return &m.share.waits[i]
	}
	return nil // not a node of the cluster: never happens
}

// ShareFetchRequest counts one ShareFetch that acquired from topic on
// node, and as failed if a partition of the topic answered an error
// (Kafka's TotalShareFetchRequestsPerSec and FailedShareFetchRequestsPerSec).
// The caller counts each topic of a request once, and only topics that
// exist: a series lives until a scrape finds its topic gone.
func (m *Metrics) ShareFetchRequest(node int32, topic storage.TopicID, failed bool) {
	c := m.share.topic(node, topic)
	c.fetches.Add(1)
	if failed {
		c.fetchesFailed.Add(1)
	}
}

// ShareAckRequest counts one request that acknowledged records of topic
// on node, and as failed if a partition of the topic was refused (Kafka's
// TotalShareAcknowledgementRequestsPerSec and
// FailedShareAcknowledgementRequestsPerSec); as ShareFetchRequest, once
// per topic that exists.
func (m *Metrics) ShareAckRequest(node int32, topic storage.TopicID, failed bool) {
	c := m.share.topic(node, topic)
	c.acks.Add(1)
	if failed {
		c.acksFailed.Add(1)
	}
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
type shareCollector struct{ m *Metrics }

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
	ctr := c.m.cfg.State.ShareCounters()
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
	ch <- c.m.delivery.metric(descDelivery)
}

// Dead-letter queues (KIP-1191, share-groups.md §10), read at scrape time.
var (
	descDLQWritten = prometheus.NewDesc("sharebroker_share_dead_letter_records_total",
		"Dead-letter records written to share groups' dead-letter topics (KIP-1191), by group and reason (rejected, delivery_limit).",
		[]string{"group", "reason"}, nil)
	descDLQDropped = prometheus.NewDesc("sharebroker_share_dead_letter_records_dropped_total",
		"Dead letters not written, by cause: topic_refused (missing, not opted in, wrong prefix) or append_failed.",
		[]string{"cause"}, nil)
)

// dlqReasonLabels name the reasons a record was dead-lettered.
var dlqReasonLabels = map[sharepartition.DeadLetterReason]string{
	sharepartition.DeadLetterRejected:      "rejected",
	sharepartition.DeadLetterDeliveryLimit: "delivery_limit",
}

// DeadLetterDropCauses name, by index, the causes State.DeadLetters
// reports dropped dead letters under.
var DeadLetterDropCauses = []string{"topic_refused", "append_failed"}

type deadLetterCollector struct{ m *Metrics }

func (c *deadLetterCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descDLQWritten
	ch <- descDLQDropped
}

func (c *deadLetterCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.cfg.State.DeadLetters(func(group string, reason sharepartition.DeadLetterReason, n int64) {
		ch <- prometheus.MustNewConstMetric(descDLQWritten, prometheus.CounterValue, float64(n), group, dlqReasonLabels[reason])
	}, func(cause int, n int64) {
		ch <- prometheus.MustNewConstMetric(descDLQDropped, prometheus.CounterValue, float64(n), DeadLetterDropCauses[cause])
	})
}

// Share metrics read at scrape time.
var (
	descBatchesInFlight = prometheus.NewDesc("sharebroker_share_batches_in_flight",
		"In-flight batches a share partition tracks (Kafka's InFlightBatchCount).",
		[]string{"group", "topic", "partition"}, nil)
	descPartitionExpirations = prometheus.NewDesc("sharebroker_share_partition_lock_expirations_total",
		"Records of a share partition whose acquisition lock expired (Kafka's AcquisitionLockTimeoutPerSec).",
		[]string{"group", "topic", "partition"}, nil)
	descFetchLockSeconds = prometheus.NewDesc("sharebroker_share_fetch_lock_seconds",
		"Time one ShareFetch pass spent acquiring from a share partition (Kafka's FetchLockTimeMs).",
		[]string{"group", "topic", "partition"}, nil)
	descFetchLockRatio = prometheus.NewDesc("sharebroker_share_fetch_lock_ratio",
		"Share of the time since the previous pass that a share partition spent in a fetch pass (Kafka's FetchLockRatio).",
		[]string{"group", "topic", "partition"}, nil)
	descSessionPartitions = prometheus.NewDesc("sharebroker_share_session_partitions",
		"Partitions across a node's open share sessions (Kafka's SharePartitionsCount).", []string{"node"}, nil)
	descSessionEvictions = prometheus.NewDesc("sharebroker_share_session_evictions_total",
		"Share sessions a node removed because their connection closed (Kafka's ShareSessionEvictionsPerSec).", []string{"node"}, nil)
	descShareFetchRequests = prometheus.NewDesc("sharebroker_share_fetch_requests_total",
		"ShareFetch requests that acquired from a topic, per topic (Kafka's TotalShareFetchRequestsPerSec).", []string{"topic", "node"}, nil)
	descShareFetchFailed = prometheus.NewDesc("sharebroker_share_fetch_requests_failed_total",
		"ShareFetch requests in which a partition of the topic answered an error (Kafka's FailedShareFetchRequestsPerSec).", []string{"topic", "node"}, nil)
	descShareAckRequests = prometheus.NewDesc("sharebroker_share_acknowledgement_requests_total",
		"ShareAcknowledge and ShareFetch requests that acknowledged records of the topic (Kafka's TotalShareAcknowledgementRequestsPerSec).", []string{"topic", "node"}, nil)
	descShareAckFailed = prometheus.NewDesc("sharebroker_share_acknowledgement_requests_failed_total",
		"Acknowledging requests in which a partition of the topic was refused (Kafka's FailedShareAcknowledgementRequestsPerSec).", []string{"topic", "node"}, nil)
	descShareFetchesWaiting = prometheus.NewDesc("sharebroker_share_fetches_waiting",
		"ShareFetch requests waiting for records on a node (Kafka's share-fetch purgatory size).", []string{"node"}, nil)
	descShareFetchesExpired = prometheus.NewDesc("sharebroker_share_fetches_expired_total",
		"Waiting ShareFetch requests whose MaxWaitMs ran out (Kafka's DelayedShareFetchMetrics ExpiresPerSec).", []string{"node"}, nil)
	descShareGroups = prometheus.NewDesc("sharebroker_share_groups",
		"Share groups by state (Kafka's share-group-count).", []string{"state"}, nil)
	descShareRebalances = prometheus.NewDesc("sharebroker_share_group_rebalances_total",
		"Share group epoch bumps (Kafka's share-group-rebalance-count).", nil, nil)
)

// shareGroupStates are the state label values; Dead is Kafka's state of a
// group being removed, which here is gone at once, so its series is 0.
var shareGroupStates = []group.ShareGroupState{group.ShareEmpty, group.ShareStable, "Dead"}

// kafkaShareCollector exports the share metrics Kafka names: per share
// partition, per node and per topic.
type kafkaShareCollector struct{ m *Metrics }

func (c *kafkaShareCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descInFlight, descBatchesInFlight, descPartitionExpirations,
		descFetchLockSeconds, descFetchLockRatio, descSessions, descSessionPartitions, descSessionEvictions,
		descShareFetchRequests, descShareFetchFailed, descShareAckRequests, descShareAckFailed,
		descShareFetchesWaiting, descShareFetchesExpired, descShareGroups, descShareRebalances} {
		ch <- d
	}
}

func (c *kafkaShareCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	state := m.cfg.State
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	state.SharePartitions(func(p SharePartition) {
		labels := []string{p.Group, p.Topic, strconv.Itoa(int(p.Partition))}
		gauge(descInFlight, float64(p.Stats.InFlight), labels...)
		gauge(descBatchesInFlight, float64(p.Stats.Batches), labels...)
		counter(descPartitionExpirations, p.Stats.LockExpirations, labels...)
		ch <- p.FetchLockTime.metric(descFetchLockSeconds, labels)
		ch <- p.FetchLockRatio.metric(descFetchLockRatio, labels)
	})
	for i, node := range m.nodes {
		st := state.ShareSessions(m.firstNode + int32(i))
		gauge(descSessions, float64(st.Sessions), node)
		gauge(descSessionPartitions, float64(st.Partitions), node)
		counter(descSessionEvictions, st.Evictions, node)
		w := &m.share.waits[i]
		gauge(descShareFetchesWaiting, float64(w.waiting.Load()), node)
		counter(descShareFetchesExpired, w.expired.Load(), node)
	}
	c.collectTopics(ch, counter)
	states := make(map[group.ShareGroupState]int, len(shareGroupStates))
	state.ShareGroups(func(s group.ShareGroupState) { states[s]++ })
	for _, s := range shareGroupStates {
		gauge(descShareGroups, float64(states[s]), string(s))
	}
	counter(descShareRebalances, state.ShareRebalances())
}

// collectTopics exports the per-topic request counters of existing topics
// and forgets those of deleted ones, so topic series stay bounded by the
// topics that exist. It reads under the lock and sends after, so a slow
// scrape never holds up a request making its topic's counters.
func (c *kafkaShareCollector) collectTopics(ch chan<- prometheus.Metric, counter func(*prometheus.Desc, int64, ...string)) {
	type row struct {
		topic, node                            string
		fetches, fetchesFailed, acks, acksFail int64
	}
	m := c.m
	s := m.share
	var rows []row
	s.topicsMu.Lock()
	for k, tc := range s.topics {
		name, ok := m.cfg.State.TopicName(k.topic)
		if !ok {
			delete(s.topics, k)
			continue
		}
		rows = append(rows, row{name, m.Node(k.node),
			tc.fetches.Load(), tc.fetchesFailed.Load(), tc.acks.Load(), tc.acksFailed.Load()})
	}
	s.topicsMu.Unlock()
	for _, r := range rows {
		counter(descShareFetchRequests, r.fetches, r.topic, r.node)
		counter(descShareFetchFailed, r.fetchesFailed, r.topic, r.node)
		counter(descShareAckRequests, r.acks, r.topic, r.node)
		counter(descShareAckFailed, r.acksFail, r.topic, r.node)
	}
}

func (h Histogram) metric(d *prometheus.Desc, labels []string) prometheus.Metric {
	return constHistogram(d, h.Bounds, h.Counts, h.Sum, labels)
}

// constHistogram exports per-bucket counts (the last one above the last
// bound) as a cumulative Prometheus histogram.
func constHistogram(d *prometheus.Desc, bounds []float64, counts []uint64, sum float64, labels []string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(bounds))
	var cum uint64
	for i, bound := range bounds {
		cum += counts[i]
		buckets[bound] = cum
	}
	return prometheus.MustNewConstHistogram(d, cum+counts[len(bounds)], sum, buckets, labels...)
}
