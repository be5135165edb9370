package conformance_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/testbroker"
	"github.com/sharebroker/sharebroker/locktimer"
)

// A peer is one broker implementation the scenarios run against.
type peer interface {
	name() string
	// start runs a fresh single-broker cluster on 127.0.0.1, port 0.
	// t.Cleanup stops it; stop may also be called earlier.
	start(t *testing.T, o peerOpts) server
}

// peerOpts are the few settings a scenario may ask of a peer.
type peerOpts struct {
	// shortLocks asks a real-time peer for acquisition locks short enough
	// that a scenario can wait for one to expire. Peers with a settable
	// clock ignore it: the scenario advances their clock instead.
	shortLocks bool
}

type server interface {
	addr() string
	// advance moves the broker's clock forward by d, firing every timer
	// due by then before it returns. A peer on the wall clock does
	// nothing: the scenario's bounded poll waits for real time instead.
	advance(d time.Duration)
	stop()
}

// sharebrokerPeer runs our broker on a manual clock, as the Kafka release
// the known differences are pinned against (known_test.go: Kafka 4.2).
type sharebrokerPeer struct{}

func (sharebrokerPeer) name() string { return "sharebroker" }

func (sharebrokerPeer) start(t *testing.T, _ peerOpts) server {
	t.Helper()
	clock := locktimer.NewManualClock(time.Unix(1_700_000_000, 0))
	cfg := broker.Config{Clock: clock, Props: map[string]string{broker.KafkaVersionProperty: "4.2"}}
	return &sharebrokerServer{b: testbroker.Start(t, cfg), clock: clock}
}

type sharebrokerServer struct {
	b     *broker.Broker
	clock *locktimer.ManualClock
}

func (s *sharebrokerServer) addr() string            { return s.b.Addr().String() }
func (s *sharebrokerServer) advance(d time.Duration) { s.clock.Advance(d) }
func (s *sharebrokerServer) stop()                   { _ = testbroker.Close(s.b) }

// kfakePeer runs franz-go's kfake, which has no clock to set.
type kfakePeer struct{}

func (kfakePeer) name() string { return "kfake" }

// kfake's short-lock settings: 1 s locks, swept every 50 ms (§8 item 1:
// kfake expires locks by a periodic sweep), so an expired lock is seen
// within about 1.05 s of real time.
var kfakeShortLocks = map[string]string{
	"group.share.record.lock.duration.ms": "1000",
	"share.record.lock.sweep.interval.ms": "50",
}

func (kfakePeer) start(t *testing.T, o peerOpts) server {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	if o.shortLocks {
		opts = append(opts, kfake.BrokerConfigs(kfakeShortLocks))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kfake.NewCluster: %v", err)
	}
	t.Cleanup(c.Close)
	return kfakeServer{c}
}

type kfakeServer struct{ c *kfake.Cluster }

func (s kfakeServer) addr() string        { return s.c.ListenAddrs()[0] }
func (kfakeServer) advance(time.Duration) {}
func (s kfakeServer) stop()               { s.c.Close() }
