package clientmetrics_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/sharebroker/sharebroker/clientmetrics"
	"github.com/sharebroker/sharebroker/internal/otlptest"
	"github.com/sharebroker/sharebroker/locktimer"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func client(b byte) clientmetrics.Client {
	return clientmetrics.Client{InstanceID: [16]byte{b}, ClientID: "app", SoftwareName: "kgo", SoftwareVersion: "1.22.3"}
}

func newStore(lim clientmetrics.Limits) (*clientmetrics.Store, *locktimer.ManualClock) {
	clock := locktimer.NewManualClock(t0)
	return clientmetrics.New(clock, lim), clock
}

func mustReceive(t *testing.T, s *clientmetrics.Store, c clientmetrics.Client, payload []byte, now time.Time) {
	t.Helper()
	if err := s.Receive(c, payload, time.Second, now); err != nil {
		t.Fatalf("Receive: %v", err)
	}
}

// series finds the series of name with attrs (key, value...) in id's
// instance; ok false when absent.
func series(t *testing.T, s *clientmetrics.Store, id byte, name string, attrs ...string) (clientmetrics.Series, bool) {
	t.Helper()
	in, ok := s.Instance([16]byte{id})
	if !ok {
		t.Fatalf("instance %d not kept", id)
	}
outer:
	for _, sr := range in.Series {
		if sr.Name != name || len(sr.Attrs)*2 != len(attrs) {
			continue
		}
		for i, a := range sr.Attrs {
			if a.Key != attrs[2*i] || a.Value != attrs[2*i+1] {
				continue outer
			}
		}
		return sr, true
	}
	return clientmetrics.Series{}, false
}

// TestDecodeKinds: each OTLP data type lands as its kind with its value and
// attributes, the resource's attributes kept on the instance
// (client-metrics-decode).
func TestDecodeKinds(t *testing.T) {
	s, _ := newStore(clientmetrics.Limits{})
	mustReceive(t, s, client(1), otlptest.Payload(t, []string{"group_id", "g1", "client_rack", "r1"},
		otlptest.Gauge("org.apache.kafka.consumer.node.request.latency.avg", 2.5, "node_id", "0"),
		otlptest.Sum("org.apache.kafka.consumer.connection.creation.total", 3, true, false),
		otlptest.Sum("queue.depth", -2, false, false),
		otlptest.Histogram("fetch.size", false, []float64{10, 100}, []uint64{1, 2, 3}, 500),
	), t0)

	in, ok := s.Instance([16]byte{1})
	if !ok || in.Client.ClientID != "app" || in.Pushes != 1 || !in.LastPush.Equal(t0) {
		t.Fatalf("instance %+v, %v", in, ok)
	}
	if want := []clientmetrics.Attr{{"client_rack", "r1"}, {"group_id", "g1"}}; !equalAttrs(in.Resource, want) {
		t.Errorf("resource %v, want %v", in.Resource, want)
	}
	if g, ok := series(t, s, 1, "org.apache.kafka.consumer.node.request.latency.avg", "node_id", "0"); !ok || g.Kind != clientmetrics.Gauge || g.Value != 2.5 {
		t.Errorf("gauge %+v, %v", g, ok)
	}
	if c, ok := series(t, s, 1, "org.apache.kafka.consumer.connection.creation.total"); !ok || c.Kind != clientmetrics.Counter || c.Value != 3 {
		t.Errorf("counter %+v, %v", c, ok)
	}
	if u, ok := series(t, s, 1, "queue.depth"); !ok || u.Kind != clientmetrics.UpDownCounter || u.Value != -2 {
		t.Errorf("up-down counter %+v, %v", u, ok)
	}
	h, ok := series(t, s, 1, "fetch.size")
	if !ok || h.Kind != clientmetrics.Histogram || h.Count != 6 || h.Sum != 500 || len(h.Buckets) != 3 || h.Buckets[2] != 3 {
		t.Errorf("histogram %+v, %v", h, ok)
	}
}

// TestInvalidPayload: bytes that are not OTLP metrics are refused with
// ErrInvalidPayload, and what the instance held is unchanged
// (client-metrics-decode).
func TestInvalidPayload(t *testing.T) {
	s, _ := newStore(clientmetrics.Limits{})
	mustReceive(t, s, client(1), otlptest.Payload(t, nil, otlptest.Gauge("g", 1)), t0)
	for _, bad := range [][]byte{{0xff, 0xff, 0xff}, []byte("not protobuf at all"), {0x0a, 0x05, 0x01}} {
		err := s.Receive(client(1), bad, time.Second, t0.Add(time.Second))
		if !errors.Is(err, clientmetrics.ErrInvalidPayload) {
			t.Errorf("Receive(%x) = %v, want ErrInvalidPayload", bad, err)
		}
	}
	in, _ := s.Instance([16]byte{1})
	if in.Pushes != 1 || !in.LastPush.Equal(t0) || len(in.Series) != 1 || in.Series[0].Value != 1 {
		t.Errorf("instance changed by refused payloads: %+v", in)
	}
	if st := s.Stats(); st.Invalid != 3 {
		t.Errorf("Invalid = %d, want 3", st.Invalid)
	}
	// An empty payload is a push with nothing in it.
	mustReceive(t, s, client(2), nil, t0)
	if in, ok := s.Instance([16]byte{2}); !ok || len(in.Series) != 0 {
		t.Errorf("empty push: %+v, %v", in, ok)
	}
}

// TestDeltaAccumulates: delta sums and histograms add up into a cumulative
// value; cumulative ones and gauges are taken as pushed
// (client-metrics-delta).
func TestDeltaAccumulates(t *testing.T) {
	s, _ := newStore(clientmetrics.Limits{})
	bounds := []float64{1, 10}
	for i, now := range []time.Time{t0, t0.Add(time.Second), t0.Add(2 * time.Second)} {
		mustReceive(t, s, client(1), otlptest.Payload(t, nil,
			otlptest.Sum("delta.total", 5, true, true),
			otlptest.Sum("cumulative.total", int64(10*(i+1)), true, false),
			otlptest.Gauge("gauge", float64(i)),
			otlptest.Histogram("delta.hist", true, bounds, []uint64{1, 0, 2}, 7),
		), now)
	}
	if d, _ := series(t, s, 1, "delta.total"); d.Value != 15 {
		t.Errorf("delta sum %v, want 15 (3 pushes of 5)", d.Value)
	}
	if c, _ := series(t, s, 1, "cumulative.total"); c.Value != 30 {
		t.Errorf("cumulative sum %v, want 30 (the latest)", c.Value)
	}
	if g, _ := series(t, s, 1, "gauge"); g.Value != 2 {
		t.Errorf("gauge %v, want 2", g.Value)
	}
	h, _ := series(t, s, 1, "delta.hist")
	if h.Count != 9 || h.Sum != 21 || h.Buckets[0] != 3 || h.Buckets[1] != 0 || h.Buckets[2] != 6 {
		t.Errorf("delta histogram %+v, want count 9 sum 21 buckets [3 0 6]", h)
	}
	if !h.Updated.Equal(t0.Add(2 * time.Second)) {
		t.Errorf("Updated %v", h.Updated)
	}
}

// TestInstanceBound: at MaxInstances a new instance evicts the one that
// pushed least recently (client-metrics-bounds).
func TestInstanceBound(t *testing.T) {
	s, _ := newStore(clientmetrics.Limits{MaxInstances: 2})
	p := otlptest.Payload(t, nil, otlptest.Gauge("g", 1))
	mustReceive(t, s, client(1), p, t0)
	mustReceive(t, s, client(2), p, t0)
	mustReceive(t, s, client(1), p, t0) // 1 pushed again: 2 is now the oldest
	mustReceive(t, s, client(3), p, t0)
	var ids []byte
	for _, in := range s.Instances() {
		ids = append(ids, in.Client.InstanceID[0])
	}
	if string(ids) != "\x01\x03" {
		t.Errorf("instances %v, want [1 3]", ids)
	}
	if st := s.Stats(); st.Evicted != 1 {
		t.Errorf("Evicted = %d, want 1", st.Evicted)
	}
}

// TestSeriesBound: beyond MaxSeriesPerInstance a new series is dropped and
// counted, while the series kept go on updating (client-metrics-bounds).
func TestSeriesBound(t *testing.T) {
	s, _ := newStore(clientmetrics.Limits{MaxSeriesPerInstance: 2})
	mustReceive(t, s, client(1), otlptest.Payload(t, nil,
		otlptest.Gauge("a", 1), otlptest.Gauge("b", 1), otlptest.Gauge("c", 1)), t0)
	mustReceive(t, s, client(1), otlptest.Payload(t, nil,
		otlptest.Gauge("a", 2), otlptest.Gauge("d", 1)), t0)
	in, _ := s.Instance([16]byte{1})
	if len(in.Series) != 2 || in.Series[0].Name != "a" || in.Series[0].Value != 2 || in.Series[1].Name != "b" {
		t.Errorf("series %+v, want a=2 and b", in.Series)
	}
	if in.DroppedPoints != 2 || s.Stats().DroppedPoints != 2 {
		t.Errorf("dropped %d (store %d), want 2", in.DroppedPoints, s.Stats().DroppedPoints)
	}
}

// TestAttributeBounds: at most MaxAttributes attributes, in key order,
// values cut at MaxValueLen, a repeated key's first value kept, non-string
// values written as text (client-metrics-bounds).
func TestAttributeBounds(t *testing.T) {
	s, _ := newStore(clientmetrics.Limits{})
	var attrs []string
	for i := range clientmetrics.MaxAttributes + 4 {
		attrs = append(attrs, string(rune('a'+i)), "v")
	}
	attrs = append(attrs, "a", "second", "long", strings.Repeat("é", clientmetrics.MaxValueLen))
	m := otlptest.Gauge("g", 1, attrs...)
	m.GetGauge().DataPoints[0].Attributes = append(m.GetGauge().DataPoints[0].Attributes,
		intAttr("b0", 7))
	mustReceive(t, s, client(1), otlptest.Payload(t, nil, m), t0)
	in, _ := s.Instance([16]byte{1})
	got := in.Series[0].Attrs
	if len(got) != clientmetrics.MaxAttributes {
		t.Fatalf("%d attributes, want %d: %v", len(got), clientmetrics.MaxAttributes, got)
	}
	if got[0] != (clientmetrics.Attr{Key: "a", Value: "v"}) || got[1].Key != "b" || got[2] != (clientmetrics.Attr{Key: "b0", Value: "7"}) {
		t.Errorf("attributes %v", got[:3])
	}
	for _, a := range got {
		if a.Key == "long" {
			if len(a.Value) > clientmetrics.MaxValueLen || !strings.HasSuffix(a.Value, "…") {
				t.Errorf("long value not cut: %d bytes", len(a.Value))
			}
		}
	}
	// An over-long metric name is dropped and counted.
	mustReceive(t, s, client(1), otlptest.Payload(t, nil, otlptest.Gauge(strings.Repeat("x", clientmetrics.MaxNameLen+1), 1)), t0)
	if st := s.Stats(); st.DroppedPoints != 1 {
		t.Errorf("DroppedPoints %d, want 1", st.DroppedPoints)
	}
}

// TestExpiry: an instance that stops pushing ages out max(60 s, 3 × its
// push interval) after its last push, on the broker clock; one that pushes
// stays (client-metrics-expiry).
func TestExpiry(t *testing.T) {
	s, clock := newStore(clientmetrics.Limits{})
	p := otlptest.Payload(t, nil, otlptest.Gauge("g", 1))
	if err := s.Receive(client(1), p, time.Second, t0); err != nil { // expires at 60 s
		t.Fatal(err)
	}
	if err := s.Receive(client(2), p, 30*time.Second, t0); err != nil { // expires at 90 s
		t.Fatal(err)
	}
	count := func() int { return len(s.Instances()) }
	if err := clock.Advance(60*time.Second - time.Nanosecond); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 2 {
		t.Fatalf("%d instances just before 60 s, want 2", n)
	}
	clock.Advance(time.Nanosecond)
	if _, ok := s.Instance([16]byte{1}); ok {
		t.Error("instance pushing every 1 s kept at 60 s")
	}
	if _, ok := s.Instance([16]byte{2}); !ok {
		t.Error("instance pushing every 30 s gone at 60 s")
	}
	if err := s.Receive(client(2), p, 30*time.Second, clock.Now()); err != nil { // pushes again: 150 s
		t.Fatal(err)
	}
	clock.Advance(89 * time.Second)
	if n := count(); n != 1 {
		t.Fatalf("%d instances at 149 s, want 1", n)
	}
	clock.Advance(time.Second)
	if n := count(); n != 0 {
		t.Fatalf("%d instances at 150 s, want 0", n)
	}
	if st := s.Stats(); st.Expired != 2 {
		t.Errorf("Expired %d, want 2", st.Expired)
	}
}

// TestTerminated: a terminating push removes the instance at once
// (client-metrics-terminated).
func TestTerminated(t *testing.T) {
	s, _ := newStore(clientmetrics.Limits{})
	mustReceive(t, s, client(1), otlptest.Payload(t, nil, otlptest.Gauge("g", 1)), t0)
	mustReceive(t, s, client(2), otlptest.Payload(t, nil, otlptest.Gauge("g", 1)), t0)
	s.Terminated(client(1), t0)
	if _, ok := s.Instance([16]byte{1}); ok {
		t.Error("terminated instance still kept")
	}
	if n := s.Len(); n != 1 {
		t.Errorf("%d instances, want 1", n)
	}
}

func TestInstanceIDRoundTrip(t *testing.T) {
	id := [16]byte{0xfb, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xff}
	s := clientmetrics.FormatInstanceID(id)
	if len(s) != 22 {
		t.Fatalf("%q: %d characters, want 22", s, len(s))
	}
	back, err := clientmetrics.ParseInstanceID(s)
	if err != nil || back != id {
		t.Fatalf("ParseInstanceID(%q) = %v, %v", s, back, err)
	}
	for _, bad := range []string{"", "abc", s + "A", strings.Repeat("!", 22)} {
		if _, err := clientmetrics.ParseInstanceID(bad); err == nil {
			t.Errorf("ParseInstanceID(%q) accepted", bad)
		}
	}
}

func equalAttrs(a, b []clientmetrics.Attr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func intAttr(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

// BenchmarkReceive is the broker's cost of one push: a payload like
// librdkafka's consumer push (about 30 series: gauges with a node_id and
// delta counters), decoded and kept by an instance that already holds
// them, with 64 other instances kept.
func BenchmarkReceive(b *testing.B) {
	s, _ := newStore(clientmetrics.Limits{})
	payload := benchPayload(b)
	for i := range 64 {
		mustReceiveB(b, s, client(byte(i+1)), payload)
	}
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		mustReceiveB(b, s, client(1), payload)
	}
}

func benchPayload(tb testing.TB) []byte {
	var ms []*metricspb.Metric
	for _, name := range []string{"connection.creation", "node.request.latency", "fetch.manager.fetch.latency",
		"coordinator.commit.latency", "coordinator.rebalance.latency", "poll.idle.ratio"} {
		full := "org.apache.kafka.consumer." + name
		for node := range 3 {
			ms = append(ms, otlptest.Gauge(full+".avg", 1.5, "node_id", strconv.Itoa(node)),
				otlptest.Gauge(full+".max", 3, "node_id", strconv.Itoa(node)))
		}
		ms = append(ms, otlptest.Sum(full+".total", 2, true, true))
	}
	return otlptest.Payload(tb, []string{"group_id", "g", "client_rack", "r"}, ms...)
}

func mustReceiveB(b *testing.B, s *clientmetrics.Store, c clientmetrics.Client, payload []byte) {
	if err := s.Receive(c, payload, time.Second, t0); err != nil {
		b.Fatal(err)
	}
}

// TestLatestReplaces: each push replaces a series' value with its new
// point's, and a metric whose type changes takes the new type
// (client-metrics-latest).
func TestLatestReplaces(t *testing.T) {
	s, _ := newStore(clientmetrics.Limits{})
	mustReceive(t, s, client(1), otlptest.Payload(t, nil, otlptest.Gauge("m", 1, "k", "v")), t0)
	mustReceive(t, s, client(1), otlptest.Payload(t, nil, otlptest.Gauge("m", 7, "k", "v")), t0.Add(time.Second))
	if g, _ := series(t, s, 1, "m", "k", "v"); g.Kind != clientmetrics.Gauge || g.Value != 7 {
		t.Errorf("after two gauges: %+v, want gauge 7", g)
	}
	mustReceive(t, s, client(1), otlptest.Payload(t, nil, otlptest.Sum("m", 3, true, true, "k", "v")), t0.Add(2*time.Second))
	if c, _ := series(t, s, 1, "m", "k", "v"); c.Kind != clientmetrics.Counter || c.Value != 3 {
		t.Errorf("after a delta sum of the same name: %+v, want counter 3 (not 7+3)", c)
	}
}
