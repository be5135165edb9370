package metrics

import "github.com/prometheus/client_golang/prometheus"

// The Fetch-session cache of each node (KIP-227), under Kafka's
// FetchSessionCache gauges: NumIncrementalFetchSessions,
// NumIncrementalFetchPartitionsCached and
// IncrementalFetchSessionEvictionsPerSec (a counter here, as Prometheus
// counts rates).
var (
	descFetchSessions = prometheus.NewDesc("sharebroker_fetch_sessions",
		"Open Fetch sessions (KIP-227), by node (Kafka's NumIncrementalFetchSessions).", []string{"node"}, nil)
	descFetchSessionPartitions = prometheus.NewDesc("sharebroker_fetch_session_partitions",
		"Partitions across a node's open Fetch sessions (Kafka's NumIncrementalFetchPartitionsCached).", []string{"node"}, nil)
	descFetchSessionEvictions = prometheus.NewDesc("sharebroker_fetch_session_evictions_total",
		"Fetch sessions a node evicted to make room for a new one (Kafka's IncrementalFetchSessionEvictionsPerSec).", []string{"node"}, nil)
)

// fetchSessionCollector reads each node's Fetch-session cache at scrape
// time, every node listed.
type fetchSessionCollector struct{ m *Metrics }

func (c *fetchSessionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descFetchSessions
	ch <- descFetchSessionPartitions
	ch <- descFetchSessionEvictions
}

func (c *fetchSessionCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	for i, node := range m.nodes {
		st := m.cfg.State.FetchSessions(m.firstNode + int32(i))
		ch <- prometheus.MustNewConstMetric(descFetchSessions, prometheus.GaugeValue, float64(st.Sessions), node)
		ch <- prometheus.MustNewConstMetric(descFetchSessionPartitions, prometheus.GaugeValue, float64(st.Partitions), node)
		ch <- prometheus.MustNewConstMetric(descFetchSessionEvictions, prometheus.CounterValue, float64(st.Evictions), node)
	}
}
