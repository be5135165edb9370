package broker_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sharebroker/sharebroker/clientmetrics"
	"github.com/sharebroker/sharebroker/internal/rawconn"
	"github.com/sharebroker/sharebroker/sharebrokertest"
)

// TestClientMetricsInvalidPayload: with no hook of the embedder's, the
// broker's own store decodes each push: bytes that are not OTLP metrics
// answer INVALID_RECORD, as Kafka answers a push its receiver cannot
// export (ClientMetricsManager.processPushTelemetryRequest), and keep
// nothing; a valid payload from the same instance is kept
// (client-metrics-decode).
func TestClientMetricsInvalidPayload(t *testing.T) {
	b := sharebrokertest.Start(t, sharebrokertest.WithHTTP(),
		sharebrokertest.WithProperty("sharebroker.telemetry.default.interval.ms", "1000"))
	base := "http://" + b.HTTPAddr
	e := &telemetryEnv{b: b, c: rawconn.Dial(t, b.Addr)}
	sub := e.get([16]byte{})
	wantTelemetryCode(t, "push of bytes that are not OTLP", e.push(sub.ClientInstanceID, sub.SubscriptionID, false, 0, []byte("not OTLP")), kerr.InvalidRecord)
	if clients := clientsJSON(t, base); len(clients) != 0 {
		t.Fatalf("an instance kept from a refused payload: %+v", clients)
	}
	if v := metricValue(t, scrape(t, base), "sharebroker_clients_payloads_invalid_total", nil); v != 1 {
		t.Errorf("sharebroker_clients_payloads_invalid_total = %v, want 1", v)
	}

	// The refused push started the interval (Kafka checks and moves the
	// push time before handing the payload on), so the next comes after it.
	b.Advance(time.Second)
	wantTelemetryCode(t, "valid push", e.push(sub.ClientInstanceID, sub.SubscriptionID, false, 0, otlpGauge(t, "app.queue.depth")), nil0)
	labels := map[string]string{"client_instance_id": clientmetrics.FormatInstanceID(sub.ClientInstanceID)}
	if v := metricValue(t, scrape(t, base), "sharebroker_client_app_queue_depth", labels); v != 1 {
		t.Errorf("sharebroker_client_app_queue_depth = %v, want 1", v)
	}
	if status, body := httpGet(t, base+"/v1/clients/"+labels["client_instance_id"]); status != http.StatusOK {
		t.Errorf("GET /v1/clients/{instance}: %d %s", status, body)
	}
}
