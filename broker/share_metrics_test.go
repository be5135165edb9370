package broker_test

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
)

// The share metrics by Kafka's names (share-groups.md §11), driven over
// loopback on the manual clock: a kgo share consumer for acknowledgements,
// lock expiries, sessions and groups; raw requests where the count must
// not depend on when kgo fetches in the background.

// partLabels names the one share partition these tests use.
var partLabels = map[string]string{"group": semGroup, "topic": semTopic, "partition": "0"}

// wantMetrics checks each named sample's value.
func wantMetrics(t *testing.T, fams map[string]*dto.MetricFamily, want []metricWant) {
	t.Helper()
	for _, w := range want {
		if got := metricValue(t, fams, w.name, w.labels); got != w.value {
			t.Errorf("%s%v = %v, want %v", w.name, w.labels, got, w.value)
		}
	}
}

type metricWant struct {
	name   string
	labels map[string]string
	value  float64
}

// waitMetric scrapes until the sample has the value, for figures a
// connection's goroutine changes after the test's last request returned
// (a closed connection's sessions, a parked fetch). Bounded by the test's
// deadline, with no sleeping: each scrape is a round trip.
func waitMetric(t *testing.T, base, name string, labels map[string]string, want float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := findMetric(scrape(t, base), name, labels)
		var got float64
		switch {
		case m == nil:
			got = -1
		case m.Counter != nil:
			got = m.Counter.GetValue()
		case m.Gauge != nil:
			got = m.Gauge.GetValue()
		}
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s%v = %v after 10s, want %v", name, labels, got, want)
		}
	}
}

// A kgo share consumer takes four records and acknowledges them accept,
// reject, renew, renew; the two renewed then expire on the manual clock.
func TestShareMetricsKgoConsumer(t *testing.T) {
	e, base := newHTTPShareEnv(t, broker.Config{})
	e.produce("r0", "r1", "r2", "r3") // four batches of one record
	c1, acks := e.consumer()
	recs := e.poll(c1)
	if len(recs) != 4 {
		t.Fatalf("first poll returned %d records, want all 4", len(recs))
	}
	recs[0].Ack(kgo.AckAccept)
	recs[1].Ack(kgo.AckReject)
	recs[2].Ack(kgo.AckRenew)
	recs[3].Ack(kgo.AckRenew)
	e.flush(c1)
	for _, err := range acks.take() {
		if err != nil {
			t.Fatalf("acknowledgement failed: %v", err)
		}
	}

	fams := scrape(t, base)
	wantMetrics(t, fams, []metricWant{
		{"sharebroker_share_records_acknowledged_total", map[string]string{"type": "accept"}, 1},
		{"sharebroker_share_records_acknowledged_total", map[string]string{"type": "reject"}, 1},
		{"sharebroker_share_records_acknowledged_total", map[string]string{"type": "renew"}, 2},
		{"sharebroker_share_records_acknowledged_total", map[string]string{"type": "release"}, 0},
		{"sharebroker_share_records_acknowledged_total", map[string]string{"type": "gap"}, 0},
		// r0 and r1 are finished, so the SPSO passed them; r2 and r3
		// remain. One acquisition made one in-flight batch of all four
		// (kgo's BatchSize is larger), as Kafka's acquireNewBatchRecords
		// does; the acknowledgements split it per offset.
		{"sharebroker_share_records_in_flight", partLabels, 2},
		{"sharebroker_share_batches_in_flight", partLabels, 1},
		{"sharebroker_share_partition_lock_expirations_total", partLabels, 0},
		{"sharebroker_share_sessions", map[string]string{"node": "0"}, 1},
		{"sharebroker_share_session_partitions", map[string]string{"node": "0"}, 1},
		{"sharebroker_share_session_evictions_total", map[string]string{"node": "0"}, 0},
		{"sharebroker_share_groups", map[string]string{"state": "Stable"}, 1},
		{"sharebroker_share_groups", map[string]string{"state": "Empty"}, 0},
		{"sharebroker_share_groups", map[string]string{"state": "Dead"}, 0},
		// Joining with a subscription is one epoch bump.
		{"sharebroker_share_group_rebalances_total", nil, 1},
	})
	if n := findMetric(fams, "sharebroker_share_fetch_lock_seconds", partLabels).GetHistogram().GetSampleCount(); n == 0 {
		t.Error("no fetch pass timed for the share partition")
	}
	if n := findMetric(fams, "sharebroker_share_fetch_lock_ratio", partLabels).GetHistogram().GetSampleCount(); n == 0 {
		t.Error("no fetch lock ratio for the share partition")
	}

	// The renewed records' locks run out: two records, on this partition.
	e.clock.Advance(semLock)
	fams = scrape(t, base)
	wantMetrics(t, fams, []metricWant{
		{"sharebroker_share_partition_lock_expirations_total", partLabels, 2},
		{"sharebroker_share_lock_expirations_total", nil, 2},
	})

	// Leaving empties the group: a second epoch bump.
	c1.Close()
	waitMetric(t, base, "sharebroker_share_groups", map[string]string{"state": "Empty"}, 1)
	wantMetrics(t, scrape(t, base), []metricWant{
		{"sharebroker_share_groups", map[string]string{"state": "Stable"}, 0},
		{"sharebroker_share_group_rebalances_total", nil, 2},
	})
}

// Requests per topic, failed ones, waiting and expired fetches, and
// sessions evicted by a closed connection, with raw requests so every
// count is the test's own.
func TestShareMetricsRequests(t *testing.T) {
	e, base := newHTTPShareEnv(t, broker.Config{})
	e.produce("r0")
	topic := map[string]string{"topic": semTopic, "node": "0"}
	requests := func(fetches, fetchesFailed, acks, acksFailed float64) []metricWant {
		return []metricWant{
			{"sharebroker_share_fetch_requests_total", topic, fetches},
			{"sharebroker_share_fetch_requests_failed_total", topic, fetchesFailed},
			{"sharebroker_share_acknowledgement_requests_total", topic, acks},
			{"sharebroker_share_acknowledgement_requests_failed_total", topic, acksFailed},
		}
	}

	m := e.raw()
	if p := partitionOf(t, m.fetch(2, "m", 0, nil, nil)); len(p.AcquiredRecords) != 1 {
		t.Fatalf("acquired %+v", p.AcquiredRecords)
	}
	wantCode(t, "accept r0", m.ack(2, "m", 1, false, []ackSpec{{0, 0, []int8{1}}}).Topics[0].Partitions[0].ErrorCode, nil)
	wantMetrics(t, scrape(t, base), requests(1, 0, 1, 0))

	// Accepting offset 1, which nothing holds (the window is empty), is
	// refused by the share partition: counted, failed. (Accepting r0
	// again would succeed: ack-below-spso.)
	m.ack(2, "m", 2, false, []ackSpec{{1, 1, []int8{1}}})
	// A batch with no types breaks a request-level rule: Kafka answers it
	// before counting, and so do we.
	m.ack(2, "m", 3, false, []ackSpec{{0, 0, nil}})
	wantMetrics(t, scrape(t, base), requests(1, 0, 2, 1))

	// Partition 7 does not exist: the fetch counts as failed for the topic,
	// once, though partition 0 answered fine.
	m.fetch(2, "m", 4, nil, func(req *kmsg.ShareFetchRequest) {
		p := kmsg.NewShareFetchRequestTopicPartition()
		p.Partition = 7
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, p)
	})
	wantMetrics(t, scrape(t, base), requests(2, 1, 2, 1))

	// Another member parks a fetch: nothing is available. The broker clock
	// ends its wait.
	w := e.raw()
	answered := make(chan *kmsg.ShareFetchResponse, 1)
	go func() {
		answered <- w.fetch(2, "w", 0, nil, func(req *kmsg.ShareFetchRequest) { req.MaxWaitMillis = 1000 })
	}()
	waitMetric(t, base, "sharebroker_share_fetches_waiting", map[string]string{"node": "0"}, 1)
	wantMetrics(t, scrape(t, base), []metricWant{
		{"sharebroker_share_sessions", map[string]string{"node": "0"}, 2},
		{"sharebroker_share_session_partitions", map[string]string{"node": "0"}, 3}, // m: 0 and 7; w: 0
		{"sharebroker_share_fetches_expired_total", map[string]string{"node": "0"}, 0},
	})
	e.clock.Advance(time.Second)
	if p := partitionOf(t, <-answered); len(p.AcquiredRecords) != 0 {
		t.Fatalf("the parked fetch acquired %+v", p.AcquiredRecords)
	}
	wantMetrics(t, scrape(t, base), append(requests(3, 1, 2, 1),
		metricWant{"sharebroker_share_fetches_waiting", map[string]string{"node": "0"}, 0},
		metricWant{"sharebroker_share_fetches_expired_total", map[string]string{"node": "0"}, 1},
	))

	// m closes its session with a request; w's connection just goes away,
	// which Kafka counts as an eviction.
	m.fetch(2, "m", -1, nil, nil)
	w.c.nc.Close()
	waitMetric(t, base, "sharebroker_share_sessions", map[string]string{"node": "0"}, 0)
	wantMetrics(t, scrape(t, base), []metricWant{
		{"sharebroker_share_session_evictions_total", map[string]string{"node": "0"}, 1},
		{"sharebroker_share_session_partitions", map[string]string{"node": "0"}, 0},
	})

	// Deleting the topic takes its series with it: topic labels stay
	// bounded by the topics that exist.
	del := kmsg.NewPtrDeleteTopicsRequest()
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr(semTopic)
	del.Topics, del.TimeoutMillis = append(del.Topics, dt), 5000
	if resp, err := del.RequestWith(e.ctx, e.admin); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete topic: %v %+v", err, resp)
	}
	fams := scrape(t, base)
	for _, gone := range []struct {
		name   string
		labels map[string]string
	}{
		{"sharebroker_share_fetch_requests_total", topic},
		{"sharebroker_share_acknowledgement_requests_failed_total", topic},
		{"sharebroker_share_records_in_flight", partLabels},
		{"sharebroker_share_fetch_lock_seconds", partLabels},
	} {
		if findMetric(fams, gone.name, gone.labels) != nil {
			t.Errorf("%s%v still served after its topic was deleted", gone.name, gone.labels)
		}
	}
}
