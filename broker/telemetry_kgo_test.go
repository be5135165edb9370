package broker_test

import (
	"context"
	"sync"
	"testing"
	"time"

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
}

type telemetryPush struct {
	client   telemetry.Client
	payload  []byte
	interval time.Duration
}

func newPushes() *pushes { return &pushes{arrived: make(chan struct{}, 64)} }

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
	if len(first.payload) == 0 {
		t.Error("first push has an empty payload")
	}
	cl.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.terminated) != 1 || p.terminated[0].InstanceID != first.client.InstanceID {
		t.Errorf("terminated = %+v, want the one instance %x", p.terminated, first.client.InstanceID)
	}
}
