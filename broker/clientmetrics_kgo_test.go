package broker_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharebroker/sharebroker/clientmetrics"
	"github.com/sharebroker/sharebroker/httpapi"
	"github.com/sharebroker/sharebroker/internal/otlptest"
	"github.com/sharebroker/sharebroker/sharebrokertest"
)

// kgoConnections is a metric kgo pushes once it has produced: the
// producer's connections made, a delta sum (franz-go's metrics_714.go), as
// /metrics names it. (Its request latency is pushed only when not zero,
// and on loopback it rounds to 0 ms.)
const kgoConnections = "sharebroker_client_org_apache_kafka_producer_connection_creation_total"

// startTelemetryBroker starts a broker on the manual clock with HTTP and the
// test API, clients subscribed by default (org.apache.kafka.*) every
// second, and p hearing each push after the broker's own store has taken
// it.
func startTelemetryBroker(t *testing.T, p *pushes) (*sharebrokertest.Broker, string) {
	b := sharebrokertest.Start(t, sharebrokertest.WithTestAPI(), sharebrokertest.WithTelemetry(p.hooks()),
		sharebrokertest.WithTopic("telemetry", 1),
		sharebrokertest.WithProperty("sharebroker.telemetry.default.interval.ms", "1000"))
	return b, "http://" + b.HTTPAddr
}

// kgoPushing starts a kgo client named id that produces once, which starts
// its telemetry, and returns it with its first accepted push.
func kgoPushing(t *testing.T, b *sharebrokertest.Broker, p *pushes, id string) (*kgo.Client, telemetryPush) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ClientID(id))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "telemetry", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The push interval is 1 s; kgo's first push comes 0.5 to 1.5
	// intervals after its subscription. The bound is for a broken broker.
	return cl, p.wait(t, 1, 10*time.Second)
}

// otlpGauge is a valid OTLP payload of one gauge named name: what an
// accepted push must carry now that the broker decodes what it keeps
// (client-metrics-decode).
func otlpGauge(t testing.TB, name string) []byte {
	return otlptest.Payload(t, nil, otlptest.Gauge(name, 1))
}

// clientsJSON is GET /v1/clients.
func clientsJSON(t *testing.T, base string) []httpapi.ClientJSON {
	t.Helper()
	status, body := httpGet(t, base+"/v1/clients")
	if status != http.StatusOK {
		t.Fatalf("GET /v1/clients: %d %s", status, body)
	}
	var out struct {
		Enabled bool                 `json:"enabled"`
		Clients []httpapi.ClientJSON `json:"clients"`
	}
	if err := json.Unmarshal(body, &out); err != nil || !out.Enabled {
		t.Fatalf("GET /v1/clients: %v %s", err, body)
	}
	return out.Clients
}

// TestClientMetricsKgoOnMetricsAndAgeOut: a kgo client's pushed metrics are
// on /metrics and /v1/clients as soon as its push is answered — within one
// push interval of its subscription — with its labels
// (client-metrics-prometheus, client-metrics-json); once it stops pushing
// it leaves both 60 s later on the broker clock, not sooner
// (client-metrics-expiry).
func TestClientMetricsKgoOnMetricsAndAgeOut(t *testing.T) {
	p := newPushes()
	b, base := startTelemetryBroker(t, p)
	_, first := kgoPushing(t, b, p, "orders-kgo")
	id := clientmetrics.FormatInstanceID(first.client.InstanceID)

	labels := map[string]string{"client_id": "orders-kgo", "client_instance_id": id, "client_software_name": "kgo"}
	if v := metricValue(t, scrape(t, base), kgoConnections, labels); v < 1 {
		t.Errorf("%s = %v, want at least the one connection it produced on", kgoConnections, v)
	}
	clients := clientsJSON(t, base)
	if len(clients) != 1 || clients[0].InstanceID != id || clients[0].ClientID != "orders-kgo" || clients[0].PushIntervalMs != 1000 {
		t.Fatalf("/v1/clients: %+v", clients)
	}

	// The client stops pushing: every later push is refused, and kgo ends
	// its metrics loop on INVALID_REQUEST. On the manual clock its pushes
	// until then were throttled (the interval had not passed), so the
	// store last heard from it at the first push.
	if status, out := httpPost(t, base+"/v1/test/faults", `{"api_key":72,"error_code":42,"count":1000}`); status != http.StatusCreated {
		t.Fatalf("arm fault: %d %s", status, out)
	}
	b.Advance(clientmetrics.MinExpiry - time.Millisecond)
	if findMetric(scrape(t, base), kgoConnections, labels) == nil {
		t.Fatal("client gone before its expiry")
	}
	b.Advance(time.Millisecond)
	fams := scrape(t, base)
	if m := findMetric(fams, kgoConnections, labels); m != nil {
		t.Errorf("client still on /metrics at its expiry: %v", m)
	}
	if v := metricValue(t, fams, "sharebroker_clients_expired_total", nil); v != 1 {
		t.Errorf("sharebroker_clients_expired_total = %v, want 1", v)
	}
	if clients := clientsJSON(t, base); len(clients) != 0 {
		t.Errorf("/v1/clients after expiry: %+v", clients)
	}
}

// TestClientMetricsKgoTerminatingRemoves: kgo's Close sends a terminating
// push, which removes the client from /metrics and /v1/clients at once
// (client-metrics-terminated).
func TestClientMetricsKgoTerminatingRemoves(t *testing.T) {
	p := newPushes()
	b, base := startTelemetryBroker(t, p)
	cl, first := kgoPushing(t, b, p, "closing-kgo")
	labels := map[string]string{"client_id": "closing-kgo", "client_instance_id": clientmetrics.FormatInstanceID(first.client.InstanceID)}
	if findMetric(scrape(t, base), kgoConnections, labels) == nil {
		_, clients := httpGet(t, base+"/v1/clients")
		t.Fatalf("pushed metric not on /metrics; /v1/clients: %s", clients)
	}
	cl.Close() // returns once the terminating push is answered
	p.mu.Lock()
	terminated := len(p.terminated)
	p.mu.Unlock()
	if terminated != 1 {
		t.Fatalf("%d terminating pushes, want 1", terminated)
	}
	text := func() string { _, body := httpGet(t, base+"/metrics"); return string(body) }()
	if strings.Contains(text, `client_id="closing-kgo"`) {
		t.Error("terminated client still on /metrics")
	}
	if clients := clientsJSON(t, base); len(clients) != 0 {
		t.Errorf("/v1/clients after the terminating push: %+v", clients)
	}
}
