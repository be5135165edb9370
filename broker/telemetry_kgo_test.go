package broker_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharebroker/sharebroker/sharebrokertest"
	"github.com/sharebroker/sharebroker/telemetry"
)

// pushes collects what a test Receiver is given.
type pushes struct {
	mu         sync.Mutex
	got        []telemetryPush
	terminated []telemetry.Client
	arrived    chan struct{}
	// forgotten gets each instance the broker forgets (Hooks.Forgotten,
	// called under the manager's lock, so the buffer must outlast a test).
	forgotten chan telemetry.Client
}

type telemetryPush struct {
	client   telemetry.Client
	payload  []byte
	interval time.Duration
}

func newPushes() *pushes {
	return &pushes{arrived: make(chan struct{}, 64), forgotten: make(chan telemetry.Client, 16)}
}

func (p *pushes) hooks() telemetry.Hooks {
	return telemetry.Hooks{
		Receiver: func(c telemetry.Client, payload []byte, interval time.Duration, _ time.Time) error {
			p.mu.Lock()
			p.got = append(p.got, telemetryPush{c, append([]byte(nil), payload...), interval})
			p.mu.Unlock()
			p.arrived <- struct{}{}
			return nil
		},
		Terminated: func(c telemetry.Client, _ time.Time) {
			p.mu.Lock()
			p.terminated = append(p.terminated, c)
			p.mu.Unlock()
		},
		Forgotten: func(c telemetry.Client, _ time.Time) { p.forgotten <- c },
	}
}

// waitForgotten fails the test unless the broker forgets instance id
// within 5 s; why says what should have made it.
func (p *pushes) waitForgotten(t *testing.T, id [16]byte, why string) {
	t.Helper()
	select {
	case c := <-p.forgotten:
		if c.InstanceID != id {
			t.Errorf("forgot %x, want %x", c.InstanceID, id)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("instance not forgotten %s", why)
	}
}

// wait returns the n-th push (from 1), failing the test after d.
func (p *pushes) wait(t *testing.T, n int, d time.Duration) telemetryPush {
	t.Helper()
	deadline := time.After(d)
	for {
		p.mu.Lock()
		if len(p.got) >= n {
			got := p.got[n-1]
			p.mu.Unlock()
			return got
		}
		p.mu.Unlock()
		select {
		case <-p.arrived:
		case <-deadline:
			t.Fatalf("push %d did not arrive within %v", n, d)
		}
	}
}

// TestTelemetryKgoDefaultSubscription: a kgo client, which pushes by
// default to a broker offering APIs 71 and 72, gets the default
// subscription with no set-up and its first push reaches the Receiver
// (telemetry-default-subscription, telemetry-receiver); its Close sends a
// terminating push, taken even within the interval (telemetry-terminating).
func TestTelemetryKgoDefaultSubscription(t *testing.T) {
	p := newPushes()
	b := sharebrokertest.Start(t, sharebrokertest.WithTelemetry(p.hooks()), sharebrokertest.WithTopic("telemetry", 1),
		sharebrokertest.WithProperty("sharebroker.telemetry.default.interval.ms", "1000"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ClientID("telemetry-kgo"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// kgo starts its telemetry at its first produce or fetch measurement.
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "telemetry", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	first := p.wait(t, 1, 10*time.Second)
	if first.client.ClientID != "telemetry-kgo" || first.client.SoftwareName != "kgo" || first.interval != time.Second {
		t.Errorf("first push from %+v at interval %v, want client ID telemetry-kgo, software kgo, 1s", first.client, first.interval)
	}
	// An OTLP ExportMetricsServiceRequest starts with its resource_metrics
	// field (1, length-delimited): 0x0a; kgo compresses with zstd, the
	// first type offered, whose frames start 0x28 instead.
	if len(first.payload) == 0 || first.payload[0] != 0x0a {
		t.Errorf("first push % x..., want OTLP in the clear", first.payload[:min(4, len(first.payload))])
	}
	// The default subscription's prefix brings kgo's metrics; "*" would
	// bring none. The producer's connection was made before kgo began to
	// push, so its connection-creation metric is in the first push
	// (request latencies may land in a later one).
	if !bytes.Contains(first.payload, []byte("org.apache.kafka.producer.connection.creation")) {
		t.Errorf("first push %q lacks the producer's connection.creation metric", first.payload)
	}
	cl.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.terminated) != 1 || p.terminated[0].InstanceID != first.client.InstanceID {
		t.Errorf("terminated = %+v, want the one instance %x", p.terminated, first.client.InstanceID)
	}
}

// TestTelemetryKgoSubscription: a CLIENT_METRICS subscription matching a
// kgo client's ID sets what it sends and how often; on the manual clock its
// next push is taken once the broker's clock passes the interval
// (telemetry-subscription-configs, telemetry-match, telemetry-throttle).
func TestTelemetryKgoSubscription(t *testing.T) {
	p := newPushes()
	b := sharebrokertest.Start(t, sharebrokertest.WithTelemetry(p.hooks()), sharebrokertest.WithTopic("telemetry", 1))
	adm, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DisableClientMetrics())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if code, msg := alterClientMetrics(t, adm, "kgo-producers",
		configOp{set, "metrics", "org.apache.kafka.producer."},
		configOp{set, "interval.ms", "1000"},
		configOp{set, "match", "client_id=kgo-sub, client_software_name=kgo"}); code != 0 {
		t.Fatalf("subscription: %v %s", kerr.ErrorForCode(code), msg)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ClientID("kgo-sub"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "telemetry", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	first := p.wait(t, 1, 10*time.Second)
	if first.interval != time.Second || !bytes.Contains(first.payload, []byte("org.apache.kafka.producer.")) {
		t.Errorf("first push at %v: %q", first.interval, first.payload)
	}
	// kgo pushes again a second of real time later; the broker takes it
	// once its own clock has moved a push interval.
	b.Advance(time.Second)
	p.wait(t, 2, 10*time.Second)
}
