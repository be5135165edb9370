package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
)

func TestOffsetForLeaderEpoch(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	raw := dialRaw(t, addr)
	createTopic(t, raw, "epochs")
	createTopic(t, raw, "empty")
	for range 3 {
		rawProduce(t, raw, "epochs", recordBatch([]int64{1, 2}, 0, nil, false))
	}

	type want struct {
		code   int16
		epoch  int32
		offset int64
	}
	cases := []struct {
		name                      string
		topic                     string
		partition                 int32
		currentEpoch, leaderEpoch int32
		want                      want
	}{
		{"epoch 0", "epochs", 0, -1, 0, want{0, 0, 6}},
		{"epoch 0 with current 0", "epochs", 0, 0, 0, want{0, 0, 6}},
		{"epoch 0 of an empty log", "empty", 0, -1, 0, want{0, 0, 0}},
		{"undefined epoch", "epochs", 0, -1, -1, want{0, -1, -1}},
		{"epoch we never had", "epochs", 0, -1, 5, want{0, -1, -1}},
		{"current epoch newer than ours", "epochs", 0, 1, 0, want{kerr.UnknownLeaderEpoch.Code, -1, -1}},
		{"unknown partition", "epochs", 3, -1, 0, want{kerr.UnknownTopicOrPartition.Code, -1, -1}},
		{"unknown topic", "nope", 0, -1, 0, want{kerr.UnknownTopicOrPartition.Code, -1, -1}},
	}
	for v := int16(2); v <= 4; v++ {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.Version = v
		req.ReplicaID = -1
		for _, c := range cases {
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = c.topic
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = c.partition, c.currentEpoch, c.leaderEpoch
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		resp := raw.request(req).(*kmsg.OffsetForLeaderEpochResponse)
		if len(resp.Topics) != len(cases) {
			t.Fatalf("v%d: %d topics answered, want %d", v, len(resp.Topics), len(cases))
		}
		for i, c := range cases {
			rt := resp.Topics[i]
			if rt.Topic != c.topic || len(rt.Partitions) != 1 || rt.Partitions[0].Partition != c.partition {
				t.Fatalf("v%d %s: answered %+v", v, c.name, rt)
			}
			p := rt.Partitions[0]
			if got := (want{p.ErrorCode, p.LeaderEpoch, p.EndOffset}); got != c.want {
				t.Errorf("v%d %s: got %+v, want %+v", v, c.name, got, c.want)
			}
		}
	}
}

// TestOffsetForLeaderEpochAdvertised checks ApiVersions lists v2-v4 and
// that kgo, which validates epochs with this API when it is advertised,
// still consumes.
func TestOffsetForLeaderEpochAdvertised(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	raw := dialRaw(t, addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "t", "1"
	resp := raw.request(req).(*kmsg.ApiVersionsResponse)
	found := false
	for _, k := range resp.ApiKeys {
		if k.ApiKey == 23 {
			found = k.MinVersion == 2 && k.MaxVersion == 4
		}
	}
	if !found {
		t.Fatalf("OffsetForLeaderEpoch v2-v4 not advertised: %+v", resp.ApiKeys)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("ofle"),
		kgo.ConsumeTopics("ofle"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("a")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.ForceMetadataRefresh()
	fs := cl.PollFetches(ctx)
	if err := fs.Err0(); err != nil || fs.NumRecords() != 1 {
		t.Fatalf("consume: %d records, %v", fs.NumRecords(), err)
	}
	// kgo's own OffsetForLeaderEpoch, as its truncation check sends it.
	ofle := kmsg.NewPtrOffsetForLeaderEpochRequest()
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = "ofle"
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, 0
	rt.Partitions = append(rt.Partitions, rp)
	ofle.Topics = append(ofle.Topics, rt)
	got, err := ofle.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if p := got.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.EndOffset != 1 || p.LeaderEpoch != 0 {
		t.Fatalf("kgo's request: %+v", p)
	}
}
