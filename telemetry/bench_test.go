package telemetry

import (
	"bytes"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sharebroker/sharebroker/locktimer"
)

// BenchmarkPush is the broker's cost of one accepted PushTelemetry below
// the wire: the checks, zstd decompression of a 4 KiB payload (larger than
// kgo's or librdkafka's usual push) and a Receiver that does nothing. Two
// clients pushing every second cost twice this per second.
func BenchmarkPush(b *testing.B) {
	clock := locktimer.NewManualClock(time.Unix(1_700_000_000, 0))
	m := New(Options{Clock: clock, Default: &Default{Interval: time.Second},
		Hooks: Hooks{Receiver: func(Client, []byte, time.Duration, time.Time) error { return nil }}})
	enc, _ := zstd.NewWriter(nil)
	payload := enc.EncodeAll(bytes.Repeat([]byte("org.apache.kafka.producer.node.request.latency.avg"), 80), nil)
	sub, err := m.Subscribe(Client{}, "conn", clock.Now())
	if err != nil {
		b.Fatal(err)
	}
	c := Client{InstanceID: sub.InstanceID}
	now := clock.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		now = now.Add(time.Second)
		if err := m.Push(c, "conn", Push{SubscriptionID: sub.SubscriptionID, Compression: 4, Metrics: payload}, now); err != nil {
			b.Fatal(err)
		}
	}
}
