package broker_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/httpapi"
	"github.com/sharebroker/sharebroker/locktimer"
)

// httpClient bounds every HTTP call a test makes.
var httpClient = &http.Client{Timeout: 10 * time.Second}

// newHTTPShareEnv is newShareEnv with the HTTP server on a free loopback
// port; it returns the env and the HTTP base URL.
func newHTTPShareEnv(t *testing.T, cfg broker.Config) (*shareEnv, string) {
	t.Helper()
	clock, ok := cfg.Clock.(*locktimer.ManualClock)
	if cfg.Clock == nil && !cfg.EnableTestAPI {
		clock = locktimer.NewManualClock(time.Unix(1_700_000_000, 0))
		cfg.Clock, ok = clock, true
	}
	cfg.HTTP = "127.0.0.1:0"
	b, addr := startBroker(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(semTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	e := &shareEnv{t: t, ctx: ctx, addr: addr, admin: admin}
	if ok {
		e.clock = clock
	}
	for _, kv := range [][2]string{
		{"share.auto.offset.reset", "earliest"},
		{"share.record.lock.duration.ms", "15000"},
		{"share.session.timeout.ms", "60000"},
	} {
		setGroupConfig(t, ctx, admin, semGroup, kv[0], kv[1])
	}
	return e, "http://" + b.HTTPAddr().String()
}

func httpGet(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := httpClient.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, body
}

// scrape parses GET /metrics with the Prometheus text parser.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := httpClient.Get(base + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: status %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	return fams
}

// metricValue returns the value of the sample of family name whose labels
// include want, failing the test if there is none.
func metricValue(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	m := findMetric(fams, name, want)
	if m == nil {
		t.Fatalf("no sample %s%v", name, want)
	}
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	t.Fatalf("%s%v is neither counter nor gauge", name, want)
	return 0
}

func findMetric(fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, lp := range m.Label {
			have[lp.GetName()] = lp.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

// The share counters and gauges after a scripted scenario: m1 acquires and
// accepts r0, acquires and releases r1; m2 reacquires r1, renews it, and
// lets its lock expire on the manual clock. The members are driven by raw
// requests, so no client fetches behind the script's back (see
// share_semantics_test.go).
func TestMetricsAfterShareScenario(t *testing.T) {
	e, base := newHTTPShareEnv(t, broker.Config{})
	e.produce("r0")
	m1, m2 := e.raw(), e.raw()
	m1.join("m1", semTopic)
	m2.join("m2", semTopic)
	acquired := func(resp *kmsg.ShareFetchResponse, first int64, count int16) {
		t.Helper()
		p := partitionOf(t, resp)
		if len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].FirstOffset != first || p.AcquiredRecords[0].DeliveryCount != count {
			t.Fatalf("acquired %+v, want offset %d at delivery count %d", p.AcquiredRecords, first, count)
		}
	}
	acquired(m1.fetch(2, "m1", 0, nil, nil), 0, 1)
	wantCode(t, "accept r0", m1.ack(2, "m1", 1, false, []ackSpec{{0, 0, []int8{1}}}).Topics[0].Partitions[0].ErrorCode, nil)
	e.produce("r1")
	acquired(m1.fetch(2, "m1", 2, nil, nil), 1, 1)
	wantCode(t, "release r1", m1.ack(2, "m1", 3, false, []ackSpec{{1, 1, []int8{2}}}).Topics[0].Partitions[0].ErrorCode, nil)
	acquired(m2.fetch(2, "m2", 0, nil, nil), 1, 2)
	wantCode(t, "renew r1", m2.ack(2, "m2", 1, true, []ackSpec{{1, 1, []int8{4}}}).Topics[0].Partitions[0].ErrorCode, nil)
	e.clock.Advance(semLock)

	fams := scrape(t, base)
	counters := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"sharebroker_share_records_acquired_total", nil, 3},
		{"sharebroker_share_records_acknowledged_total", map[string]string{"type": "accept"}, 1},
		{"sharebroker_share_records_acknowledged_total", map[string]string{"type": "release"}, 1},
		{"sharebroker_share_records_acknowledged_total", map[string]string{"type": "reject"}, 0},
		{"sharebroker_share_records_acknowledged_total", map[string]string{"type": "gap"}, 0},
		{"sharebroker_share_records_acknowledged_total", map[string]string{"type": "renew"}, 1},
		{"sharebroker_share_lock_expirations_total", nil, 1},
		{"sharebroker_share_records_archived_total", map[string]string{"reason": "rejected"}, 0},
		{"sharebroker_share_records_archived_total", map[string]string{"reason": "delivery_limit"}, 0},
		{"sharebroker_share_records_in_flight", map[string]string{"group": semGroup, "topic": semTopic, "partition": "0"}, 1},
		{"sharebroker_locktimer_timers", nil, 0},
		{"sharebroker_share_sessions", nil, 2},
		{"sharebroker_share_records_released_on_leader_move_total", nil, 0},
		{"sharebroker_requests_total", map[string]string{"api": "Produce", "error_code": "0", "node": "0"}, 2},
		{"sharebroker_panics_recovered_total", nil, 0},
		{"sharebroker_frames_rejected_total", map[string]string{"reason": "malformed_header", "node": "0"}, 0},
	}
	for _, c := range counters {
		if got := metricValue(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// Delivery counts handed out: r0@1, r1@1, r1@2.
	h := findMetric(fams, "sharebroker_share_delivery_count", nil).GetHistogram()
	if h.GetSampleCount() != 3 || h.GetSampleSum() != 4 {
		t.Errorf("delivery count histogram: count %d sum %v, want 3 and 4", h.GetSampleCount(), h.GetSampleSum())
	}
	for _, b := range h.Bucket {
		want := map[float64]uint64{1: 2}[b.GetUpperBound()]
		if b.GetUpperBound() >= 2 {
			want = 3
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("delivery count bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	if findMetric(fams, "sharebroker_request_duration_seconds", map[string]string{"api": "ShareFetch", "node": "0"}) == nil {
		t.Error("no ShareFetch latency histogram")
	}
	if findMetric(fams, "go_goroutines", nil) == nil || findMetric(fams, "process_start_time_seconds", nil) == nil {
		t.Error("Go or process collector missing")
	}
	if metricValue(t, fams, "sharebroker_connections", map[string]string{"node": "0"}) < 3 {
		t.Error("fewer than three connections counted (admin and two members)")
	}

	// The inspection API shows the same window: r0 acknowledged and gone,
	// r1 available with delivery count 2.
	status, body := httpGet(t, base+"/v1/share-groups/"+semGroup)
	if status != http.StatusOK {
		t.Fatalf("share group: status %d: %s", status, body)
	}
	var sg httpapi.ShareGroupJSON
	if err := json.Unmarshal(body, &sg); err != nil {
		t.Fatal(err)
	}
	if sg.Group == nil || len(sg.Group.Members) != 2 || len(sg.Partitions) != 1 {
		t.Fatalf("share group: %s", body)
	}
	p := sg.Partitions[0]
	if p.Topic != semTopic || p.SPSO != 1 || p.SPEO != 1 || len(p.Ranges) != 1 ||
		p.Ranges[0].State != "AVAILABLE" || p.Ranges[0].DeliveryCount != 2 || p.Ranges[0].LockDeadline != "" {
		t.Fatalf("share partition: %s", body)
	}
}

// A registry the embedding program supplies holds every collector once New
// returns, before any request or scrape: the program may gather from it
// without asking the broker (a registry of the broker's own is filled on
// first use).
func TestSuppliedRegistryFilledAtNew(t *testing.T) {
	reg := prometheus.NewRegistry()
	b, err := broker.New(broker.Config{Listen: "127.0.0.1:0", Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range fams {
		got[f.GetName()] = true
	}
	for _, name := range []string{"sharebroker_requests_total", "sharebroker_frames_rejected_total", "sharebroker_connections", "go_goroutines", "process_start_time_seconds"} {
		if !got[name] {
			t.Errorf("supplied registry lacks %s after New", name)
		}
	}
}

func TestHTTPInspectionAndHealth(t *testing.T) {
	e, base := newHTTPShareEnv(t, broker.Config{})
	e.produce("r0")
	holder := e.raw()
	holder.join("holder", semTopic)
	if p := partitionOf(t, holder.fetch(2, "holder", 0, nil, nil)); len(p.AcquiredRecords) != 1 {
		t.Fatalf("holder acquired %+v", p.AcquiredRecords) // held: the window shows its lock
	}

	for _, path := range []string{"/healthz", "/readyz"} {
		if status, body := httpGet(t, base+path); status != http.StatusOK {
			t.Errorf("%s: status %d: %s", path, status, body)
		}
	}
	status, body := httpGet(t, base+"/v1/topics")
	var topics struct{ Topics []httpapi.TopicJSON }
	if err := json.Unmarshal(body, &topics); status != http.StatusOK || err != nil {
		t.Fatalf("topics: %d %v: %s", status, err, body)
	}
	if len(topics.Topics) != 1 || topics.Topics[0].Name != semTopic || topics.Topics[0].Partitions[0].HighWatermark != 1 {
		t.Fatalf("topics: %s", body)
	}
	status, body = httpGet(t, base+"/v1/groups")
	var groups struct{ Groups []httpapi.GroupJSON }
	if err := json.Unmarshal(body, &groups); status != http.StatusOK || err != nil {
		t.Fatalf("groups: %d %v: %s", status, err, body)
	}
	if len(groups.Groups) != 1 || groups.Groups[0].GroupID != semGroup || len(groups.Groups[0].Members) != 1 ||
		len(groups.Groups[0].Members[0].Assignment) != 1 || groups.Groups[0].Members[0].Assignment[0].Topic != semTopic {
		t.Fatalf("groups: %s", body)
	}
	member := groups.Groups[0].Members[0].MemberID

	status, body = httpGet(t, base+"/v1/share-groups/"+semGroup)
	var sg httpapi.ShareGroupJSON
	if err := json.Unmarshal(body, &sg); status != http.StatusOK || err != nil {
		t.Fatalf("share group: %d %v: %s", status, err, body)
	}
	r := sg.Partitions[0].Ranges
	wantDeadline := e.clock.Now().Add(semLock).UTC().Format(time.RFC3339Nano)
	if len(r) != 1 || r[0].State != "ACQUIRED" || r[0].Owner != member || r[0].DeliveryCount != 1 || r[0].LockDeadline != wantDeadline {
		t.Fatalf("share partition ranges %+v, want r0 ACQUIRED by %s until %s", r, member, wantDeadline)
	}
	if status, _ := httpGet(t, base+"/v1/share-groups/nobody"); status != http.StatusNotFound {
		t.Errorf("unknown group: status %d, want 404", status)
	}
	// Clock control is off by default.
	resp, err := httpClient.Post(base+"/v1/test/clock/advance", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("test API without --enable-test-api: status %d, want 404", resp.StatusCode)
	}
}

// Readiness follows the Kafka listener: ready after Start, not ready once
// Close has begun (the HTTP server then stops too).
func TestReadyzFollowsListener(t *testing.T) {
	b, err := broker.New(broker.Config{Listen: "127.0.0.1:0", HTTP: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if b.HTTPAddr() != nil {
		t.Fatal("HTTP address before Start")
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	base := "http://" + b.HTTPAddr().String()
	if status, body := httpGet(t, base+"/readyz"); status != http.StatusOK {
		t.Fatalf("readyz: %d %s", status, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := httpClient.Get(base + "/readyz"); err == nil {
		t.Fatal("HTTP server still answers after Close")
	}
}
