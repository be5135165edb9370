package bench_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sharebroker/sharebroker/broker"
)

// The workload every peer gets: one topic of four partitions, 100-byte
// values, no keys.
const (
	benchTopic      = "bench"
	benchPartitions = 4
	valueBytes      = 100

	// benchDeadline bounds any one measured loop; a peer that stalls fails
	// the benchmark instead of hanging it.
	benchDeadline = 2 * time.Minute
)

// A peer is one broker implementation under test. start runs a fresh,
// empty broker on a loopback port and returns its address and a stop
// function. Setup may differ between peers (kfake seeds the topic,
// sharebroker creates it on the first Metadata request); the measured
// loops never do.
type peer struct {
	name  string
	start func(tb testing.TB) (addr string, stop func())
}

var peers = []peer{
	{name: "sharebroker", start: startSharebroker},
	{name: "kfake", start: startKfake},
}

func startSharebroker(tb testing.TB) (string, func()) {
	tb.Helper()
	return startSharebrokerProps(tb, nil)
}

// startSharebrokerProps is startSharebroker with extra broker properties,
// which override the defaults.
func startSharebrokerProps(tb testing.TB, extra map[string]string) (string, func()) {
	tb.Helper()
	return startSharebrokerNodes(tb, 1, extra)
}

// startSharebrokerNodes starts a cluster of n nodes in this process and
// returns the first node's address as the bootstrap.
func startSharebrokerNodes(tb testing.TB, n int, extra map[string]string) (string, func()) {
	tb.Helper()
	props := map[string]string{"num.partitions": "4"}
	maps.Copy(props, extra)
	b, stop := startBroker(tb, broker.Config{Listen: "127.0.0.1:0", Props: props, Nodes: n})
	return b.Addr().String(), stop
}

// startBroker starts a sharebroker configured by cfg and returns it with a
// function that closes it within 10 s.
func startBroker(tb testing.TB, cfg broker.Config) (*broker.Broker, func()) {
	tb.Helper()
	b, err := broker.New(cfg)
	if err != nil {
		tb.Fatalf("broker.New: %v", err)
	}
	if err := b.Start(); err != nil {
		tb.Fatalf("broker.Start: %v", err)
	}
	return b, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			tb.Errorf("broker.Close: %v", err)
		}
	}
}

func startKfake(tb testing.TB) (string, func()) {
	tb.Helper()
	return startKfakeBrokers(tb, 1)
}

// startKfakeBrokers starts a kfake cluster of n brokers, with opts added.
func startKfakeBrokers(tb testing.TB, n int, opts ...kfake.Opt) (string, func()) {
	tb.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(n), kfake.SeedTopics(benchPartitions, benchTopic)}, opts...)...)
	if err != nil {
		tb.Fatalf("kfake.NewCluster: %v", err)
	}
	return c.ListenAddrs()[0], c.Close
}

// benchValue is the value of every record. Records share it; kgo does not
// modify values.
var benchValue = func() []byte {
	v := make([]byte, valueBytes)
	for i := range v {
		v[i] = 'a' + byte(i%26)
	}
	return v
}()
