package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/cluster"
)

// kgoNodes and kgoSpread are the cluster and the topic of the kgo test.
const kgoNodes, kgoSpread = 3, 6

// Rules: leaders-spread, not-leader, coordinator-by-key: kgo against three
// nodes finds the leaders of a 6-partition topic on all three, produces
// to the leaders, consumes every record once in a consumer group whose
// coordinator may be any node, commits, and a share group consumes and
// accepts everything, fetching from every leader.
func TestNodesKgoProduceConsumeShare(t *testing.T) {
	b, addr := startBroker(t, broker.Config{Nodes: kgoNodes})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic, n = "spread", 600

	admin, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctx, kgoSpread, kgoNodes, nil, topic); err != nil {
		t.Fatal(err)
	}
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Brokers) != 3 {
		t.Fatalf("brokers %v", md.Brokers)
	}
	model, _ := cluster.New(0, kgoNodes)
	model.AddPartitions(topic, 0, kgoSpread)
	leaders := map[int32]int{}
	for _, p := range md.Topics[topic].Partitions {
		if want, _ := model.Leader(topic, p.Partition); p.Leader != want.Leader {
			t.Fatalf("partition %d led by %d, want %d (leaders-spread)", p.Partition, p.Leader, want.Leader)
		}
		leaders[p.Leader]++
		if len(p.Replicas) != 3 || len(p.ISR) != 3 {
			t.Fatalf("partition %+v", p)
		}
	}
	if len(leaders) != 3 {
		t.Fatalf("leaders %v, want partitions led by all three nodes", leaders)
	}

	producer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	produceValues(t, ctx, producer, topic, 0, n)

	// A consumer group: every record once, then the commit.
	const groupID = "readers"
	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumerGroup(groupID),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	seen := map[string]int{}
	for len(seen) < n && ctx.Err() == nil {
		fs := consumer.PollFetches(ctx)
		fs.EachError(func(topic string, p int32, err error) { t.Errorf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	for v, c := range seen {
		if c != 1 {
			t.Fatalf("%s consumed %d times", v, c)
		}
	}
	if len(seen) != n {
		t.Fatalf("consumed %d of %d", len(seen), n)
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	committed, err := adm.FetchOffsets(ctx, groupID)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	committed.Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != n {
		t.Fatalf("committed offsets sum to %d, want %d", sum, n)
	}

	// A share group reads everything and accepts it: its member fetches
	// from each partition's leader, one share session per node.
	const shareGroup = "sharers"
	setGroupConfig(t, ctx, admin, shareGroup, "share.auto.offset.reset", "earliest")
	share := newShareConsumer(t, addr, topic, shareGroup)
	got := map[string]bool{}
	accept := func(r *kgo.Record) { got[string(r.Value)] = true; r.Ack(kgo.AckAccept) }
	for len(got) < n && ctx.Err() == nil {
		share.PollFetches(ctx).EachRecord(accept)
		if err := share.FlushAcks(ctx); err != nil && ctx.Err() == nil {
			t.Fatalf("flush acks: %v", err)
		}
	}
	if len(got) != n {
		t.Fatalf("share group got %d of %d", len(got), n)
	}
	// Every record accepted (FlushAcks waited for the answers): each share
	// partition's start has reached the end of its log.
	sg, _ := b.ShareGroup(shareGroup)
	var spso int64
	for _, p := range sg.Partitions {
		spso += p.SPSO
	}
	if len(sg.Partitions) != kgoSpread || spso != n {
		t.Fatalf("share partitions not all accepted: %+v", sg.Partitions)
	}
}
