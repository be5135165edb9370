package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sharebroker/sharebroker/clientmetrics"
	"github.com/sharebroker/sharebroker/internal/otlptest"
	"github.com/sharebroker/sharebroker/locktimer"
)

var clientT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// scrape serves m's registry over HTTP, as /metrics does, and returns the
// text exposition; a registry that cannot be gathered fails the test.
func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(m, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s\n%s", resp.Status, body)
	}
	return string(body)
}

func clientMetrics(t *testing.T) (*Metrics, *clientmetrics.Store, *locktimer.ManualClock) {
	clock := locktimer.NewManualClock(clientT0)
	store := clientmetrics.New(clock, clientmetrics.Limits{})
	m := New(Config{Registry: prometheus.NewRegistry(), Lazy: true, FirstNode: 0, Nodes: 1,
		State: &fakeState{}, Clients: store})
	return m, store, clock
}

func wantLines(t *testing.T, text string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(text, "\n"+l+"\n") {
			t.Errorf("no line %q in the scrape", l)
		}
	}
}

// TestClientMetricsOnScrape: what a client pushed is on /metrics under
// sharebroker_client_, its OTLP name sanitized, with the client's labels
// and its attributes; counters end in _total; histograms have their
// buckets; the client's info series carries its resource
// (client-metrics-prometheus).
func TestClientMetricsOnScrape(t *testing.T) {
	m, store, _ := clientMetrics(t)
	c := clientmetrics.Client{InstanceID: [16]byte{1}, ClientID: "orders", SoftwareName: "apache-kafka-java",
		SoftwareVersion: "4.1.0", SourceAddress: "127.0.0.1", SourcePort: 5000, Principal: "User:ANONYMOUS", Listener: "PLAINTEXT"}
	err := store.Receive(c, otlptest.Payload(t, []string{"group_id", "g1", "client_id", "orders"},
		otlptest.Gauge("org.apache.kafka.consumer.fetch.manager.fetch.latency.avg", 12.5, "node.id", "0", "le", "x"),
		otlptest.Sum("org.apache.kafka.consumer.connection.creation.total", 4, true, true),
		otlptest.Sum("org.apache.kafka.producer.record.count", 9, true, false),
		otlptest.Histogram("request.size", false, []float64{100, 1000}, []uint64{1, 2, 0}, 1500),
	), time.Second, clientT0)
	if err != nil {
		t.Fatal(err)
	}
	text := scrape(t, m)
	id := clientmetrics.FormatInstanceID(c.InstanceID)
	labels := `client_id="orders",client_instance_id="` + id + `",client_software_name="apache-kafka-java",client_software_version="4.1.0"`
	wantLines(t, text,
		`sharebroker_client_org_apache_kafka_consumer_fetch_manager_fetch_latency_avg{attr_le="x",`+labels+`,node_id="0"} 12.5`,
		`sharebroker_client_org_apache_kafka_consumer_connection_creation_total{`+labels+`} 4`,
		`sharebroker_client_org_apache_kafka_producer_record_count_total{`+labels+`} 9`,
		`sharebroker_client_request_size_bucket{`+labels+`,le="100"} 1`,
		`sharebroker_client_request_size_bucket{`+labels+`,le="1000"} 3`,
		`sharebroker_client_request_size_bucket{`+labels+`,le="+Inf"} 3`,
		`sharebroker_client_request_size_sum{`+labels+`} 1500`,
		`sharebroker_clients_info{`+labels+`,client_source_address="127.0.0.1",client_source_port="5000",group_id="g1",listener="PLAINTEXT",principal="User:ANONYMOUS",resource_client_id="orders"} 1`,
		`sharebroker_clients 1`,
		`# TYPE sharebroker_client_org_apache_kafka_producer_record_count_total counter`,
	)
}

// TestClientMetricsConflictsLeftOut: series /metrics cannot show beside
// the others — a family pushed with two types, a gauge named as a
// histogram's _count, two series equal once sanitized, a client ID that is
// not UTF-8 — are left out or mended, and the scrape still answers
// (client-metrics-prometheus).
func TestClientMetricsConflictsLeftOut(t *testing.T) {
	m, store, _ := clientMetrics(t)
	a := clientmetrics.Client{InstanceID: [16]byte{1}, ClientID: "a"}
	b := clientmetrics.Client{InstanceID: [16]byte{2}, ClientID: "b\xff"}
	if err := store.Receive(a, otlptest.Payload(t, nil,
		otlptest.Gauge("x.latency", 1),
		otlptest.Histogram("h", false, nil, []uint64{2}, 3),
		otlptest.Gauge("h.count", 7),
		otlptest.Gauge("dup", 1, "k.1", "v"),
		otlptest.Gauge("dup", 2, "k_1", "v"),
	), time.Second, clientT0); err != nil {
		t.Fatal(err)
	}
	if err := store.Receive(b, otlptest.Payload(t, nil,
		otlptest.Histogram("x.latency", false, nil, []uint64{1}, 1), // a gauge family already
		otlptest.Gauge("ok", 5),
	), time.Second, clientT0); err != nil {
		t.Fatal(err)
	}
	text := scrape(t, m)
	if strings.Contains(text, "# TYPE sharebroker_client_h_count gauge") || strings.Contains(text, "} 7\n") {
		t.Error("a gauge named as the histogram's _count is on the scrape")
	}
	if strings.Contains(text, "sharebroker_client_x_latency_bucket") {
		t.Error("a histogram in a gauge family is on the scrape")
	}
	if n := strings.Count(text, "sharebroker_client_dup{"); n != 1 {
		t.Errorf("%d series of the duplicated labels, want 1", n)
	}
	wantLines(t, text,
		`sharebroker_client_h_count{client_id="a",client_instance_id="`+clientmetrics.FormatInstanceID(a.InstanceID)+`",client_software_name="",client_software_version=""} 2`,
		`sharebroker_client_ok{client_id="b`+"\uFFFD"+`",client_instance_id="`+clientmetrics.FormatInstanceID(b.InstanceID)+`",client_software_name="",client_software_version=""} 5`,
	)
}

// TestClientMetricsAgeOut: a client that stops pushing leaves the scrape
// once its expiry passes on the broker clock, counted as expired
// (client-metrics-expiry).
func TestClientMetricsAgeOut(t *testing.T) {
	m, store, clock := clientMetrics(t)
	c := clientmetrics.Client{InstanceID: [16]byte{9}, ClientID: "gone"}
	if err := store.Receive(c, otlptest.Payload(t, nil, otlptest.Gauge("g", 1)), time.Second, clientT0); err != nil {
		t.Fatal(err)
	}
	if text := scrape(t, m); !strings.Contains(text, `sharebroker_client_g{client_id="gone"`) {
		t.Fatal("pushed gauge not on the scrape")
	}
	clock.Advance(clientmetrics.MinExpiry)
	text := scrape(t, m)
	if strings.Contains(text, "sharebroker_client_g{") || strings.Contains(text, "sharebroker_clients_info{") {
		t.Error("aged-out client still on the scrape")
	}
	wantLines(t, text, "sharebroker_clients 0", "sharebroker_clients_expired_total 1")
}

// TestClientMetricsOff: with no store (telemetry off) nothing of clients is
// registered (client-metrics-off).
func TestClientMetricsOff(t *testing.T) {
	m := New(Config{Registry: prometheus.NewRegistry(), Lazy: true, FirstNode: 0, Nodes: 1, State: &fakeState{}})
	if text := scrape(t, m); strings.Contains(text, "sharebroker_client") {
		t.Error("client metrics registered with telemetry off")
	}
}

func TestSanitize(t *testing.T) {
	for _, c := range []struct{ in, metric, label string }{
		{"org.apache.kafka.consumer.fetch.manager.fetch.latency.avg", "org_apache_kafka_consumer_fetch_manager_fetch_latency_avg", "org_apache_kafka_consumer_fetch_manager_fetch_latency_avg"},
		{"a..b--c", "a_b_c", "a_b_c"},
		{"ns:x", "ns:x", "ns_x"},
		{"0abc", "0abc", "key_0abc"},
		{"été", "_t_", "_t_"},
	} {
		if got := sanitize(c.in, true); got != c.metric {
			t.Errorf("sanitize(%q, metric) = %q, want %q", c.in, got, c.metric)
		}
		if got := labelName(c.in); got != c.label {
			t.Errorf("labelName(%q) = %q, want %q", c.in, got, c.label)
		}
	}
}
