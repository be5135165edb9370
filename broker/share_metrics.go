package broker

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/shareserve"
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

// shareMetrics is what the request path counts for the share metrics.
type shareMetrics struct {
	// topics counts ShareFetch and acknowledgement requests per node and
	// topic. Entries are made on first use and dropped by the scrape that
	// finds their topic gone.
	topicsMu sync.RWMutex
	topics   map[shareTopicKey]*shareTopicCounts
	// waits holds the delayed share fetches of each node, by node ID minus
	// the first node's ID (metrics.nodes).
	waits []shareWaits
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

// shareWaits is one node's delayed share fetches: Kafka's share-fetch
// purgatory size and DelayedShareFetchMetrics ExpiresPerSec.
type shareWaits struct {
	waiting atomic.Int64
	expired atomic.Int64
}

func newShareMetrics(nodes int) *shareMetrics {
	return &shareMetrics{topics: make(map[shareTopicKey]*shareTopicCounts), waits: make([]shareWaits, nodes)}
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

// parkedOn returns node's count of waiting share fetches, which
// shareserve keeps while a request is parked.
func (m *metrics) parkedOn(node int32) *atomic.Int64 {
	if i := int(node - m.firstNode); i >= 0 && i < len(m.share.waits) {
		return &m.share.waits[i].waiting
	}
	return nil // not a node of the cluster: never happens
}

// countShareFetch adds what one ShareFetch counted (shareserve.FetchResult):
// its acknowledgements and acquisitions per topic, and an expired wait.
func (b *Broker) countShareFetch(node int32, res shareserve.FetchResult) {
	b.countShareAcks(node, res.Acks)
	for _, o := range res.Fetches {
		c := b.metrics.share.topic(node, o.TopicID)
		c.fetches.Add(1)
		if o.Failed {
			c.fetchesFailed.Add(1)
		}
	}
	if res.Expired {
		if i := int(node - b.metrics.firstNode); i >= 0 && i < len(b.metrics.share.waits) {
			b.metrics.share.waits[i].expired.Add(1)
		}
	}
}

// countShareAcks adds the acknowledgement outcomes of one request, one per
// topic shareserve counted.
func (b *Broker) countShareAcks(node int32, acks []shareserve.TopicOutcome) {
	for _, o := range acks {
		c := b.metrics.share.topic(node, o.TopicID)
		c.acks.Add(1)
		if o.Failed {
			c.acksFailed.Add(1)
		}
	}
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
type kafkaShareCollector struct{ b *Broker }

func (c *kafkaShareCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descInFlight, descBatchesInFlight, descPartitionExpirations,
		descFetchLockSeconds, descFetchLockRatio, descSessions, descSessionPartitions, descSessionEvictions,
		descShareFetchRequests, descShareFetchFailed, descShareAckRequests, descShareAckFailed,
		descShareFetchesWaiting, descShareFetchesExpired, descShareGroups, descShareRebalances} {
		ch <- d
	}
}

func (c *kafkaShareCollector) Collect(ch chan<- prometheus.Metric) {
	b, m := c.b, c.b.metrics
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for _, p := range b.shares.All() {
		t := b.store.TopicByID(p.Key.TopicID)
		if t == nil {
			continue
		}
		labels := []string{p.Key.Group, t.Name, strconv.Itoa(int(p.Key.Partition))}
		st := p.Part.Share.Stats()
		gauge(descInFlight, float64(st.InFlight), labels...)
		gauge(descBatchesInFlight, float64(st.Batches), labels...)
		counter(descPartitionExpirations, st.LockExpirations, labels...)
		fl := p.Part.FetchLock.Snapshot()
		ch <- constHistogram(descFetchLockSeconds, shareserve.FetchLockTimeBounds[:], fl.TimeBuckets[:], fl.TimeSum.Seconds(), labels)
		ch <- constHistogram(descFetchLockRatio, shareserve.FetchLockRatioBounds[:], fl.RatioBuckets[:], fl.RatioSum, labels)
	}
	for i, node := range m.nodes {
		st := b.shares.Sessions.StatsOn(m.firstNode + int32(i))
		gauge(descSessions, float64(st.Sessions), node)
		gauge(descSessionPartitions, float64(st.Partitions), node)
		counter(descSessionEvictions, st.Evictions, node)
		w := &m.share.waits[i]
		gauge(descShareFetchesWaiting, float64(w.waiting.Load()), node)
		counter(descShareFetchesExpired, w.expired.Load(), node)
	}
	c.collectTopics(ch, counter)
	states := make(map[group.ShareGroupState]int, len(shareGroupStates))
	for _, g := range b.shareGroups.List() {
		states[g.State]++
	}
	for _, s := range shareGroupStates {
		gauge(descShareGroups, float64(states[s]), string(s))
	}
	counter(descShareRebalances, b.shareGroups.Rebalances())
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
	s := c.b.metrics.share
	var rows []row
	s.topicsMu.Lock()
	for k, tc := range s.topics {
		t := c.b.store.TopicByID(k.topic)
		if t == nil {
			delete(s.topics, k)
			continue
		}
		rows = append(rows, row{t.Name, c.b.metrics.node(k.node),
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
