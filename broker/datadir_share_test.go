package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/testbroker"
)

// shareOnDir starts a broker on dir and a rawShare on it; with seed, topic
// "t" gets n records, one per batch, and group "g" reads from the earliest.
func shareOnDir(t *testing.T, dir string, seed int) (*broker.Broker, *rawShare) {
	t.Helper()
	b := testbroker.Start(t, broker.Config{DataDir: dir})
	addr := b.Addr().String()
	s := &rawShare{t: t, c: dialRaw(t, addr), group: "g"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if seed > 0 {
		s.topicID = seedShareTopic(t, ctx, cl, seed)
		return b, s
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}}
	resp, err := md.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	s.topicID = resp.Topics[0].TopicID
	return b, s
}

// share-state-as-kafka, in process: accepted and rejected records are
// never delivered again after a restart, released ones come back with
// their counts, the SPSO survives, the group exists, and the offset admin
// APIs' changes are kept. (What a SIGKILL leaves of records acquired at
// the moment is in cmd/sharebroker's subprocess test: a clean close
// releases them, as a closing connection does.)
func TestDataDirShareState(t *testing.T) {
	dir := t.TempDir()
	b1, s := shareOnDir(t, dir, 10)
	p := partitionOf(t, s.fetch(2, "m1", 0, nil, nil))
	if len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].LastOffset != 9 {
		t.Fatalf("acquired %+v; want 0-9", p.AcquiredRecords)
	}
	ack := s.ack(2, "m1", 1, false, []ackSpec{{0, 1, []int8{1}}, {2, 3, []int8{2}}, {4, 4, []int8{3}}})
	wantCode(t, "acknowledge", ack.Topics[0].Partitions[0].ErrorCode, nil)
	// 2-3 released (count 1) are acquired again: count 2, not written.
	p = partitionOf(t, s.fetch(2, "m1", 2, nil, nil))
	if len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].FirstOffset != 2 || p.AcquiredRecords[0].DeliveryCount != 2 {
		t.Fatalf("second fetch acquired %+v; want 2-3 at count 2", p.AcquiredRecords)
	}
	if err := testbroker.Close(b1); err != nil {
		t.Fatal(err)
	}

	b2, s2 := shareOnDir(t, dir, 0)
	if spso, _ := s2.offsetOf("g"); spso != 2 {
		t.Fatalf("SPSO %d after restart; want 2", spso)
	}
	listed := s2.c.request(kmsg.NewPtrListGroupsRequest()).(*kmsg.ListGroupsResponse)
	if len(listed.Groups) != 1 || listed.Groups[0].Group != "g" {
		t.Fatalf("groups after restart %+v; want the share group g", listed.Groups)
	}
	p = partitionOf(t, s2.fetch(2, "m2", 0, nil, nil))
	// The close released m1's records (member gone): 2-3 at count 2, 5-9
	// at count 1; the next delivery adds one. 0-1 and 4 never come back.
	want := []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{
		{FirstOffset: 2, LastOffset: 3, DeliveryCount: 3}, {FirstOffset: 5, LastOffset: 9, DeliveryCount: 2}}
	if len(p.AcquiredRecords) != len(want) {
		t.Fatalf("acquired after restart %+v; want %+v", p.AcquiredRecords, want)
	}
	for i, w := range want {
		if g := p.AcquiredRecords[i]; g.FirstOffset != w.FirstOffset || g.LastOffset != w.LastOffset || g.DeliveryCount != w.DeliveryCount {
			t.Fatalf("acquired after restart %+v; want %+v", p.AcquiredRecords, want)
		}
	}
	if r := s2.ack(2, "m2", -1, false, nil); r.ErrorCode != 0 {
		t.Fatalf("closing the session: code %d", r.ErrorCode)
	}
	if r := s2.alterOffsets("g", "t", 0, 8); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter: %+v", r)
	}
	if err := testbroker.Close(b2); err != nil {
		t.Fatal(err)
	}

	b3, s3 := shareOnDir(t, dir, 0)
	if spso, lag := s3.offsetOf("g"); spso != 8 || lag != 2 {
		t.Fatalf("after AlterShareGroupOffsets and a restart: SPSO %d lag %d; want 8 and 2", spso, lag)
	}
	if r := s3.deleteOffsets("g", "t"); r.ErrorCode != 0 {
		t.Fatalf("delete: code %d", r.ErrorCode)
	}
	if err := testbroker.Close(b3); err != nil {
		t.Fatal(err)
	}

	_, s4 := shareOnDir(t, dir, 0)
	if spso, _ := s4.offsetOf("g"); spso != -1 {
		t.Fatalf("after DeleteShareGroupOffsets and a restart: SPSO %d; want -1 (no state)", spso)
	}
}
