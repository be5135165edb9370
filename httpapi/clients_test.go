package httpapi

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sharebroker/sharebroker/clientmetrics"
	"github.com/sharebroker/sharebroker/internal/otlptest"
	"github.com/sharebroker/sharebroker/locktimer"
	"github.com/sharebroker/sharebroker/storage"
)

func clientsServer(t *testing.T, store *clientmetrics.Store) *httptest.Server {
	f := &fake{ready: true, store: storage.NewStore(), clock: locktimer.NewManualClock(time.Unix(1000, 0))}
	srv := httptest.NewServer(Handler(Config{Metrics: prometheus.NewRegistry(), State: f, Clients: store}))
	t.Cleanup(srv.Close)
	return srv
}

// TestClientsJSON: GET /v1/clients lists each client instance with its
// labels, pushes and series in the API's form, and GET
// /v1/clients/{instance} answers one by its Kafka Uuid; an instance that
// ages out on the broker clock leaves both (client-metrics-json).
func TestClientsJSON(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := locktimer.NewManualClock(t0)
	store := clientmetrics.New(clock, clientmetrics.Limits{})
	srv := clientsServer(t, store)

	c := clientmetrics.Client{InstanceID: [16]byte{7, 1}, ClientID: "orders", SoftwareName: "kgo", SoftwareVersion: "1.22.3",
		SourceAddress: "127.0.0.1", SourcePort: 4000, Principal: "User:ANONYMOUS", Listener: "PLAINTEXT"}
	err := store.Receive(c, otlptest.Payload(t, []string{"group_id", "g"},
		otlptest.Gauge("org.apache.kafka.consumer.node.request.latency.avg", 3.5, "node_id", "0"),
		otlptest.Gauge("ratio", math.NaN()),
		otlptest.Sum("org.apache.kafka.consumer.connection.creation.total", 2, true, true),
		otlptest.Histogram("size", false, []float64{10}, []uint64{1, 1}, 25),
	), 5*time.Second, t0)
	if err != nil {
		t.Fatal(err)
	}
	id := clientmetrics.FormatInstanceID(c.InstanceID)

	status, body := do(t, srv, "GET", "/v1/clients", "")
	if status != http.StatusOK {
		t.Fatalf("GET /v1/clients: %d %s", status, body)
	}
	var list struct {
		Enabled bool         `json:"enabled"`
		Clients []ClientJSON `json:"clients"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if !list.Enabled || len(list.Clients) != 1 {
		t.Fatalf("list: %s", body)
	}
	got := list.Clients[0]
	if got.InstanceID != id || got.ClientID != "orders" || got.SoftwareName != "kgo" || got.SourcePort != 4000 ||
		got.PushIntervalMs != 5000 || got.Pushes != 1 || got.Resource["group_id"] != "g" ||
		got.LastPush != "2026-01-01T00:00:00Z" || got.Expires != "2026-01-01T00:01:00Z" {
		t.Errorf("client: %+v", got)
	}
	if len(got.Metrics) != 4 {
		t.Fatalf("metrics: %s", body)
	}
	// In name order: the two org.apache.kafka ones, ratio, size.
	if m := got.Metrics[1]; m.Name != "org.apache.kafka.consumer.node.request.latency.avg" || m.Kind != "gauge" ||
		m.Value == nil || *m.Value != 3.5 || m.Attributes["node_id"] != "0" {
		t.Errorf("gauge: %+v", m)
	}
	if m := got.Metrics[0]; m.Kind != "counter" || *m.Value != 2 {
		t.Errorf("counter: %+v", m)
	}
	var raw struct {
		Clients []struct {
			Metrics []map[string]any `json:"metrics"`
		} `json:"clients"`
	}
	json.Unmarshal([]byte(body), &raw)
	if v := raw.Clients[0].Metrics[2]["value"]; v != "NaN" {
		t.Errorf("NaN gauge written as %v, want \"NaN\"", v)
	}
	if m := got.Metrics[3]; m.Kind != "histogram" || *m.Count != 2 || *m.Sum != 25 || len(m.Buckets) != 2 ||
		m.Buckets[0] != (BucketJSON{LE: 10, Count: 1}) || m.Buckets[1].Count != 2 {
		t.Errorf("histogram: %+v", m)
	}
	if b := raw.Clients[0].Metrics[3]["buckets"].([]any); b[1].(map[string]any)["le"] != "+Inf" {
		t.Errorf("last bucket: %v", b[1])
	}

	status, body = do(t, srv, "GET", "/v1/clients/"+id, "")
	var one ClientJSON
	if status != http.StatusOK || json.Unmarshal([]byte(body), &one) != nil || one.InstanceID != id || len(one.Metrics) != 4 {
		t.Errorf("GET /v1/clients/%s: %d %s", id, status, body)
	}
	if status, body := do(t, srv, "GET", "/v1/clients/not-a-uuid", ""); status != http.StatusBadRequest {
		t.Errorf("bad ID: %d %s", status, body)
	}
	if status, body := do(t, srv, "GET", "/v1/clients/"+clientmetrics.FormatInstanceID([16]byte{9}), ""); status != http.StatusNotFound {
		t.Errorf("unknown ID: %d %s", status, body)
	}

	clock.Advance(clientmetrics.MinExpiry)
	if status, _ := do(t, srv, "GET", "/v1/clients/"+id, ""); status != http.StatusNotFound {
		t.Errorf("aged-out client: %d, want 404", status)
	}
	_, body = do(t, srv, "GET", "/v1/clients", "")
	if err := json.Unmarshal([]byte(body), &list); err != nil || len(list.Clients) != 0 {
		t.Errorf("after expiry: %s", body)
	}
}

// TestClientsOff: with telemetry off GET /v1/clients answers an empty list
// and enabled false, and no instance is found (client-metrics-off).
func TestClientsOff(t *testing.T) {
	srv := clientsServer(t, nil)
	status, body := do(t, srv, "GET", "/v1/clients", "")
	var list map[string]any
	if status != http.StatusOK || json.Unmarshal([]byte(body), &list) != nil || list["enabled"] != false || len(list["clients"].([]any)) != 0 {
		t.Errorf("GET /v1/clients: %d %s", status, body)
	}
	if status, _ := do(t, srv, "GET", "/v1/clients/"+clientmetrics.FormatInstanceID([16]byte{1}), ""); status != http.StatusNotFound {
		t.Errorf("instance with telemetry off: %d, want 404", status)
	}
}
