//go:build cgo

package clients

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sharebroker/sharebroker/sharebrokertest"
	"github.com/sharebroker/sharebroker/telemetry"
)

// TestLibrdkafkaTelemetry: librdkafka (since 2.5.0) asks a broker that
// offers GetTelemetrySubscriptions for a subscription and pushes its
// metrics, compressed with the first type the broker accepts that it was
// built with; with no set-up (the default subscription) its pushes reach
// the Receiver decompressed, and its close sends a terminating push
// (docs/telemetry.md telemetry-default-subscription, telemetry-receiver,
// telemetry-terminating).
func TestLibrdkafkaTelemetry(t *testing.T) {
	var mu sync.Mutex
	var got []telemetry.Client
	var terminated []telemetry.Client
	arrived := make(chan struct{}, 64)
	e := startRdkafka(t, sharebrokertest.WithProperty("sharebroker.telemetry.default.interval.ms", "500"),
		sharebrokertest.WithTelemetry(telemetry.Hooks{
			Receiver: func(c telemetry.Client, payload []byte, interval time.Duration, _ time.Time) error {
				// An OTLP ExportMetricsServiceRequest starts with its
				// resource_metrics field (1, length-delimited): 0x0a. A
				// compressed payload would not.
				if len(payload) == 0 || payload[0] != 0x0a || interval != 500*time.Millisecond {
					t.Errorf("push of %d bytes starting % x at interval %v, want OTLP in the clear at 500ms", len(payload), payload[:min(4, len(payload))], interval)
				}
				if !bytes.Contains(payload, []byte("org.apache.kafka.producer.")) {
					t.Errorf("push %q has no producer metric", payload)
				}
				mu.Lock()
				got = append(got, c)
				mu.Unlock()
				arrived <- struct{}{}
				return nil
			},
			Terminated: func(c telemetry.Client, _ time.Time) {
				mu.Lock()
				terminated = append(terminated, c)
				mu.Unlock()
			},
		}))
	e.createTopic("telemetry", 1)
	p := e.producer(kafka.ConfigMap{"client.id": "rd-telemetry"})
	topic := "telemetry"
	if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: []byte("v")}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-arrived:
	case <-time.After(rdWait):
		t.Fatal("librdkafka pushed no telemetry")
	}
	p.Close()
	mu.Lock()
	defer mu.Unlock()
	first := got[0]
	t.Logf("%d pushes, the first from %+v", len(got), first)
	if first.ClientID != "rd-telemetry" || first.SoftwareName != "confluent-kafka-go" && first.SoftwareName != "librdkafka" {
		t.Errorf("pushing client %+v, want client ID rd-telemetry from librdkafka", first)
	}
	if len(terminated) != 1 || terminated[0].InstanceID != first.InstanceID {
		t.Errorf("terminated %+v, want the producer's instance %x", terminated, first.InstanceID)
	}
}
