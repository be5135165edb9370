package broker_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
)

// Two named listeners in one broker, configured with Kafka's properties:
// a client bootstrapped on each sees its own listener's address in
// Metadata, and produces and consumes through it. A third listener
// advertises a name that does not resolve here, as a container network's
// would: every API that names a broker answers that name on it.
func TestListenersAdvertisePerListener(t *testing.T) {
	b, _ := startBroker(t, broker.Config{Props: map[string]string{
		"listeners":                      "HOST://127.0.0.1:0,DOCKER://127.0.0.1:0,EXT://127.0.0.1:0",
		"advertised.listeners":           "EXT://broker.invalid:29092",
		"listener.security.protocol.map": "HOST:PLAINTEXT,DOCKER:PLAINTEXT,EXT:PLAINTEXT",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range []string{"HOST", "DOCKER"} {
		addr := b.ListenerAddr(name).String()
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(),
			kgo.ConsumeTopics("t-"+name), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(meta.Brokers) != 1 || net.JoinHostPort(meta.Brokers[0].Host, strconv.Itoa(int(meta.Brokers[0].Port))) != addr {
			t.Fatalf("%s: Metadata brokers %+v, want only %s", name, meta.Brokers, addr)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t-" + name, Value: []byte(name)}).FirstErr(); err != nil {
			t.Fatalf("%s: produce: %v", name, err)
		}
		fetches := cl.PollRecords(ctx, 1)
		if err := fetches.Err(); err != nil {
			t.Fatalf("%s: poll: %v", name, err)
		}
		if recs := fetches.Records(); len(recs) != 1 || string(recs[0].Value) != name {
			t.Fatalf("%s: consumed %+v", name, recs)
		}
	}

	c := dialRaw(t, b.ListenerAddr("EXT").String())
	want := "broker.invalid:29092"
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(12)
	if r := c.request(meta).(*kmsg.MetadataResponse); len(r.Brokers) != 1 || hostPort(r.Brokers[0].Host, r.Brokers[0].Port) != want {
		t.Errorf("EXT Metadata brokers %+v, want %s", r.Brokers, want)
	}
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.SetVersion(1)
	dc.EndpointType = 1
	if r := c.request(dc).(*kmsg.DescribeClusterResponse); len(r.Brokers) != 1 || hostPort(r.Brokers[0].Host, r.Brokers[0].Port) != want {
		t.Errorf("EXT DescribeCluster brokers %+v, want %s", r.Brokers, want)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(4)
	fc.CoordinatorKeys = []string{"g"}
	if r := c.request(fc).(*kmsg.FindCoordinatorResponse); len(r.Coordinators) != 1 || hostPort(r.Coordinators[0].Host, r.Coordinators[0].Port) != want {
		t.Errorf("EXT FindCoordinator %+v, want %s", r.Coordinators, want)
	}
}

func hostPort(host string, port int32) string { return fmt.Sprintf("%s:%d", host, port) }

// A listener that cannot bind stops Start, and the others are released.
func TestListenersBindFailure(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	b, err := broker.New(broker.Config{Listeners: []broker.ListenerConfig{
		{Name: "A", Listen: "127.0.0.1:0"},
		{Name: "B", Listen: taken.Addr().String()},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	if err := b.Start(); err == nil {
		t.Fatal("Start bound a listener on a port in use")
	}
	if b.Addr() != nil {
		t.Fatalf("a listener stayed bound: %v", b.Addr())
	}
}
