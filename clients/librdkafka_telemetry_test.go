//go:build cgo

package clients

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/clientmetrics"
	"github.com/sharebroker/sharebroker/sharebrokertest"
	"github.com/sharebroker/sharebroker/telemetry"
)

// rdFetchLatency is the consumer metric of KIP-714 librdkafka pushes: the
// fetch latency average, by its OTLP name and as /metrics names it.
const (
	rdFetchLatencyOTLP = "org.apache.kafka.consumer.fetch.manager.fetch.latency.avg"
	rdFetchLatency     = "sharebroker_client_org_apache_kafka_consumer_fetch_manager_fetch_latency_avg"
)

// pushLog hears every accepted push after the broker's store has taken it:
// the client and the payload, uncompressed.
type pushLog struct {
	mu         sync.Mutex
	pushes     []rdPush
	terminated []telemetry.Client
	arrived    chan struct{}
}

type rdPush struct {
	client  telemetry.Client
	payload []byte
}

func (l *pushLog) hooks() telemetry.Hooks {
	return telemetry.Hooks{
		Receiver: func(c telemetry.Client, payload []byte, _ time.Duration, _ time.Time) error {
			l.mu.Lock()
			l.pushes = append(l.pushes, rdPush{c, bytes.Clone(payload)})
			l.mu.Unlock()
			select {
			case l.arrived <- struct{}{}:
			default:
			}
			return nil
		},
		Terminated: func(c telemetry.Client, _ time.Time) {
			l.mu.Lock()
			l.terminated = append(l.terminated, c)
			l.mu.Unlock()
		},
	}
}

// find returns the first push from clientID whose payload holds name.
func (l *pushLog) find(clientID, name string) (rdPush, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.pushes {
		if p.client.ClientID == clientID && bytes.Contains(p.payload, []byte(name)) {
			return p, true
		}
	}
	return rdPush{}, false
}

func httpBody(t *testing.T, url string) string {
	t.Helper()
	cl := &http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", url, resp.Status, body)
	}
	return string(body)
}

// seriesLine is the line of /metrics text of family name whose labels
// include every one of labels (name="value"), "" when there is none.
func seriesLine(text, name string, labels ...string) string {
lines:
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(line, l) {
				continue lines
			}
		}
		return line
	}
	return ""
}

// TestLibrdkafkaClientMetrics: a librdkafka consumer, which pushes its
// metrics by default to a broker offering a subscription, shows its fetch
// latency on /metrics and /v1/clients as soon as the push carrying it is
// answered — within one push interval of its fetching — under its client
// ID and instance ID (client-metrics-prometheus, client-metrics-json); its
// Close sends a terminating push, which removes it
// (client-metrics-terminated).
func TestLibrdkafkaClientMetrics(t *testing.T) {
	log := &pushLog{arrived: make(chan struct{}, 1)}
	e := startRdkafka(t, sharebrokertest.WithHTTP(), sharebrokertest.WithTelemetry(log.hooks()),
		sharebrokertest.WithProperty("sharebroker.telemetry.default.interval.ms", "1000"))
	base := "http://" + e.b.HTTPAddr
	const topic, consumerID = "rd-telemetry", "rd-telemetry-consumer"
	e.createTopic(topic, 1)
	e.produce(e.producer(nil), topic, makeRecs("t", 1, 20))
	c := e.consumer(consumerID, "rd-telemetry-group", nil)
	if err := c.Subscribe(topic, nil); err != nil {
		t.Fatal(err)
	}

	// Consume while waiting for the push that carries the fetch latency:
	// librdkafka pushes every interval (1 s) from its own threads.
	deadline := time.Now().Add(rdWait)
	var push rdPush
	for {
		var ok bool
		if push, ok = log.find(consumerID, rdFetchLatencyOTLP); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no push from %s carrying %s within %v", consumerID, rdFetchLatencyOTLP, rdWait)
		}
		pollEvent(t, c, topic, 100)
	}
	// The push was answered only after the store took it: the series is
	// on /metrics now, not after some later refresh.
	id := clientmetrics.FormatInstanceID(push.client.InstanceID)
	text := httpBody(t, base+"/metrics")
	line := seriesLine(text, rdFetchLatency, `client_id="`+consumerID+`"`, `client_instance_id="`+id+`"`)
	if line == "" {
		t.Fatalf("no %s series of %s on /metrics:\n%s", rdFetchLatency, consumerID, grepLines(text, "sharebroker_client"))
	}
	t.Logf("%s", line)

	var one struct {
		ClientID     string `json:"client_id"`
		SoftwareName string `json:"client_software_name"`
		Metrics      []struct {
			Name string `json:"name"`
			Kind string `json:"kind"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal([]byte(httpBody(t, base+"/v1/clients/"+id)), &one); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range one.Metrics {
		found = found || m.Name == rdFetchLatencyOTLP && m.Kind == "gauge"
	}
	if one.ClientID != consumerID || !found {
		t.Errorf("/v1/clients/%s: %+v, want client %s with gauge %s", id, one, consumerID, rdFetchLatencyOTLP)
	}

	c.close(t)
	log.mu.Lock()
	terminated := false
	for _, tc := range log.terminated {
		terminated = terminated || tc.InstanceID == push.client.InstanceID
	}
	log.mu.Unlock()
	if !terminated {
		t.Fatal("librdkafka's Close sent no terminating push")
	}
	if line := seriesLine(httpBody(t, base+"/metrics"), rdFetchLatency, `client_instance_id="`+id+`"`); line != "" {
		t.Errorf("terminated consumer still on /metrics: %s", line)
	}
}

func grepLines(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
