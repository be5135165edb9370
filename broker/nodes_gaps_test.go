package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/internal/batchtest"
	"github.com/sharebroker/sharebroker/internal/rawconn"
)

// createTopicWithConfig creates topic (one partition) with one config
// override over c.
func createTopicWithConfig(t *testing.T, c *rawconn.Conn, topic, name, value string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, -1
	rc := kmsg.NewCreateTopicsRequestTopicConfig()
	rc.Name, rc.Value = name, kmsg.StringPtr(value)
	rt.Configs = append(rt.Configs, rc)
	req.Topics = append(req.Topics, rt)
	resp := c.Request(req).(*kmsg.CreateTopicsResponse)
	if resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %d %v", topic, resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage)
	}
}

// produceRaw sends one batch of n records to partition 0 of topic with
// acks and returns the partition's answer.
func produceRaw(t *testing.T, c *rawconn.Conn, topic string, acks int16, n int) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks, req.TimeoutMillis = acks, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batchtest.Plain(n).Build()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return c.Request(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// Rule: min-isr (docs/cluster.md): an acks=-1 Produce to a partition whose
// ISR (the nodes that are up) is smaller than min.insync.replicas answers
// NOT_ENOUGH_REPLICAS and appends nothing; acks=1 is not checked; a
// min.insync.replicas above the replica count is capped at it (Kafka's
// Partition.effectiveMinIsr).
func TestNodesMinInsyncReplicas(t *testing.T) {
	b, model := startNodes(t, 3)
	model.AddPartitions("m", 0, 1)
	model.AddPartitions("big", 0, 1)
	leader, _ := model.Leader("m", 0)
	c := rawconn.Dial(t, nodeListenerAddr(t, b, leader.Leader, "PLAINTEXT"))
	createTopicWithConfig(t, c, "m", "min.insync.replicas", "2")
	createTopicWithConfig(t, c, "big", "min.insync.replicas", "5")
	bl, _ := model.Leader("big", 0)
	cb := rawconn.Dial(t, nodeListenerAddr(t, b, bl.Leader, "PLAINTEXT"))
	if p := produceRaw(t, cb, "big", -1, 1); p.ErrorCode != 0 {
		t.Fatalf("min 5 capped at 3 replicas, all up: %+v", p)
	}

	var stopped []int32
	for id := int32(5); id < 8; id++ {
		if id != leader.Leader {
			stopped = append(stopped, id)
		}
	}
	if err := b.StopNode(stopped[0]); err != nil {
		t.Fatal(err)
	}
	if p := produceRaw(t, c, "m", -1, 1); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("ISR 2, min 2: %+v", p)
	}
	if err := b.StopNode(stopped[1]); err != nil {
		t.Fatal(err)
	}
	p := produceRaw(t, c, "m", -1, 1)
	if p.ErrorCode != kerr.NotEnoughReplicas.Code || p.BaseOffset != -1 || p.ErrorMessage != nil {
		t.Fatalf("ISR 1, min 2, acks=-1: %+v", p)
	}
	if p := produceRaw(t, c, "m", 1, 1); p.ErrorCode != 0 || p.BaseOffset != 1 {
		t.Fatalf("ISR 1, min 2, acks=1 (the refused batch must not be stored): %+v", p)
	}
	if err := b.StartNode(stopped[0]); err != nil {
		t.Fatal(err)
	}
	if p := produceRaw(t, c, "m", -1, 1); p.ErrorCode != 0 || p.BaseOffset != 2 {
		t.Fatalf("ISR 2 again: %+v", p)
	}
}
