package broker_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/batchtest"
	"github.com/sharebroker/sharebroker/internal/testbroker"
	"github.com/sharebroker/sharebroker/locktimer"
)

// rawRecords is a partition's whole log as Fetch sends it.
func (c *rawConn) rawRecords(topic string, partition int32) []byte {
	c.t.Helper()
	resp := c.request(fetchReq(topic, partition, 0)).(*kmsg.FetchResponse)
	return resp.Topics[0].Partitions[0].RecordBatches
}

// same-bytes, producer-ids-reserved: a broker on the same data directory
// serves the same batches byte for byte, with the topic's ID and configs,
// and hands out producer IDs no earlier broker did.
func TestDataDirRestart(t *testing.T) {
	dir := t.TempDir()
	b1 := testbroker.Start(t, broker.Config{DataDir: dir})
	c := dialRaw(t, b1.Addr().String())
	c.createTopics("kept")
	pid, _ := c.initProducerID(-1, -1)
	for i := range 3 {
		if p := c.produce("kept", 0, idemBatch(pid, 0, int32(2*i), 2).Build()); p.ErrorCode != 0 {
			t.Fatalf("produce %d: code %d", i, p.ErrorCode)
		}
	}
	want := c.rawRecords("kept", 0)
	meta := c.request(&kmsg.MetadataRequest{Version: 12, Topics: []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("kept")}}}).(*kmsg.MetadataResponse)
	if err := testbroker.Close(b1); err != nil {
		t.Fatal(err)
	}

	b2 := testbroker.Start(t, broker.Config{DataDir: dir})
	c2 := dialRaw(t, b2.Addr().String())
	if got := c2.rawRecords("kept", 0); !bytes.Equal(got, want) {
		t.Fatalf("after restart %d bytes, want the same %d byte for byte", len(got), len(want))
	}
	meta2 := c2.request(&kmsg.MetadataRequest{Version: 12, Topics: []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("kept")}}}).(*kmsg.MetadataResponse)
	if meta2.Topics[0].TopicID != meta.Topics[0].TopicID {
		t.Errorf("topic ID %x after restart, was %x", meta2.Topics[0].TopicID, meta.Topics[0].TopicID)
	}
	// producer-state-from-log: the last batch retried is a duplicate.
	if p := c2.produce("kept", 0, idemBatch(pid, 0, 4, 2).Build()); p.ErrorCode != 0 || p.BaseOffset != 4 {
		t.Errorf("retry after restart: code %d offset %d, want the original offset 4", p.ErrorCode, p.BaseOffset)
	}
	if pid2, _ := c2.initProducerID(-1, -1); pid2 <= pid {
		t.Errorf("producer ID %d after restart; %d was handed out before", pid2, pid)
	}
}

// ready-after-recovery: /readyz is 503 while the data directory is read.
func TestDataDirReadyAfterRecovery(t *testing.T) {
	b, err := broker.New(broker.Config{Listen: "127.0.0.1:0", HTTP: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	status := 0
	broker.SetBeforeRecover(b, func() {
		resp, err := http.Get(fmt.Sprintf("http://%s/readyz", b.HTTPAddr()))
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
		status = resp.StatusCode
	})
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testbroker.Close(b) })
	if status != http.StatusServiceUnavailable {
		t.Errorf("/readyz during recovery: %d, want 503", status)
	}
	resp, err := http.Get(fmt.Sprintf("http://%s/readyz", b.HTTPAddr()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz after Start: %d, want 200", resp.StatusCode)
	}
}

// one-data-dir, data-dir-one-node, lock-dir: configuration mistakes fail
// naming what is wrong.
func TestDataDirConfigErrors(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]struct {
		cfg  broker.Config
		want string
	}{
		"two log.dirs":     {broker.Config{Props: map[string]string{"log.dirs": dir + "," + dir + "2"}}, "log.dirs"},
		"disagreeing dirs": {broker.Config{DataDir: dir, Props: map[string]string{"log.dirs": dir + "2"}}, "set twice"},
		"nodes":            {broker.Config{DataDir: dir, Nodes: 2}, "single node"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := broker.New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error naming %s", err, tc.want)
			}
		})
	}
	testbroker.Start(t, broker.Config{Props: map[string]string{"log.dirs": dir}})
	b, err := broker.New(broker.Config{Listen: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second broker on %s: %v, want an error naming it", dir, err)
	}
	testbroker.Close(b)
}

// commitRaw commits offset to partition 0 of topic for a group: a simple
// commit (generation -1) without member, else as memberID at epoch.
func (c *rawConn) commitRaw(group, topic, memberID string, epoch int32, offset int64) {
	c.t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(9)
	req.Group, req.MemberID, req.Generation = group, memberID, epoch
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset, rp.LeaderEpoch, rp.Metadata = offset, -1, kmsg.StringPtr("meta-"+group)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := c.request(req).(*kmsg.OffsetCommitResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		c.t.Fatalf("commit %s: code %d", group, code)
	}
}

// fetchCommitted returns a group's committed offset and metadata of
// partition 0 of topic.
func (c *rawConn) fetchCommitted(group, topic string) (int64, string) {
	c.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(7)
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	resp := c.request(req).(*kmsg.OffsetFetchResponse)
	if resp.ErrorCode != 0 {
		c.t.Fatalf("offset fetch %s: code %d", group, resp.ErrorCode)
	}
	p := resp.Topics[0].Partitions[0]
	meta := ""
	if p.Metadata != nil {
		meta = *p.Metadata
	}
	return p.Offset, meta
}

// group-offsets-kept, group-configs-kept: committed offsets of a classic
// and a KIP-848 group and a GROUP config survive a restart, each group
// keeping its kind.
func TestDataDirGroups(t *testing.T) {
	dir := t.TempDir()
	b1 := testbroker.Start(t, broker.Config{DataDir: dir})
	c := dialRaw(t, b1.Addr().String())
	c.createTopics("t")
	c.commitRaw("classic-g", "t", "", -1, 7)

	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.SetVersion(0)
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "g848", "m1", 0, 30000
	hb.SubscribedTopicNames = []string{"t"}
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	joined := c.request(hb).(*kmsg.ConsumerGroupHeartbeatResponse)
	if joined.ErrorCode != 0 {
		t.Fatalf("heartbeat: code %d", joined.ErrorCode)
	}
	member := hb.MemberID
	if joined.MemberID != nil {
		member = *joined.MemberID
	}
	c.commitRaw("g848", "t", member, joined.MemberEpoch, 11)
	c.commitRaw("g848", "t", member, joined.MemberEpoch, 12) // the later commit wins

	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "g848"
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "consumer.session.timeout.ms", Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr("50000")}}
	alter.Resources = append(alter.Resources, res)
	if code := c.request(alter).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode; code != 0 {
		t.Fatalf("alter group config: code %d", code)
	}
	if err := testbroker.Close(b1); err != nil {
		t.Fatal(err)
	}

	b2 := testbroker.Start(t, broker.Config{DataDir: dir})
	c2 := dialRaw(t, b2.Addr().String())
	if off, meta := c2.fetchCommitted("classic-g", "t"); off != 7 || meta != "meta-classic-g" {
		t.Errorf("classic group after restart: offset %d metadata %q, want 7 and meta-classic-g", off, meta)
	}
	if off, _ := c2.fetchCommitted("g848", "t"); off != 12 {
		t.Errorf("KIP-848 group after restart: offset %d, want 12", off)
	}
	desc := kmsg.NewPtrConsumerGroupDescribeRequest()
	desc.Groups = []string{"g848"}
	if g := c2.request(desc).(*kmsg.ConsumerGroupDescribeResponse).Groups[0]; g.ErrorCode != 0 || g.State != "Empty" {
		t.Errorf("KIP-848 group after restart: code %d state %q, want an Empty consumer group", g.ErrorCode, g.State)
	}
	describe := kmsg.NewPtrDescribeConfigsRequest()
	describe.SetVersion(4)
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName, dr.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, "g848", []string{"consumer.session.timeout.ms"}
	describe.Resources = append(describe.Resources, dr)
	got := c2.request(describe).(*kmsg.DescribeConfigsResponse).Resources[0]
	if len(got.Configs) != 1 || got.Configs[0].Value == nil || *got.Configs[0].Value != "50000" {
		t.Errorf("group config after restart: %+v, want consumer.session.timeout.ms=50000", got.Configs)
	}
}

// txn-state-kept: a committed transaction stays visible under
// read_committed after a restart; one left open stays open, holding the
// last stable offset, until its timeout aborts it with the epoch raised, as
// Kafka's coordinator would after loading it; one with a pending offset
// commit stays open too, and committing it after the restart applies the
// offset.
func TestDataDirTransactionsAfterRestart(t *testing.T) {
	dir := t.TempDir()
	clock := locktimer.NewManualClock(time.Unix(1_700_000_000, 0))
	cfg := broker.Config{DataDir: dir, Clock: clock}
	b1 := testbroker.Start(t, cfg)
	c := dialRaw(t, b1.Addr().String())
	c.createTopics("tx", "ox")
	pid, epoch, ec := c.initTxn("done", 60_000)
	code(t, "init", ec, nil)
	code(t, "add", c.addPartition("done", pid, epoch, "tx", 0), nil)
	code(t, "produce", c.produce("tx", 0, batchtest.Transactional(pid, epoch, 0, 2).Build()).ErrorCode, nil) // 0-1
	code(t, "commit", c.endTxn("done", pid, epoch, true), nil)                                               // marker 2
	open, oepoch, ec := c.initTxn("open", 60_000)
	code(t, "init open", ec, nil)
	code(t, "add open", c.addPartition("open", open, oepoch, "tx", 0), nil)
	code(t, "produce open", c.produce("tx", 0, batchtest.Transactional(open, oepoch, 0, 1).Build()).ErrorCode, nil) // 3
	grp, gepoch, ec := c.initTxn("with-offsets", 60_000)
	code(t, "init with-offsets", ec, nil)
	code(t, "add with-offsets", c.addPartition("with-offsets", grp, gepoch, "ox", 0), nil)
	code(t, "produce with-offsets", c.produce("ox", 0, batchtest.Transactional(grp, gepoch, 0, 1).Build()).ErrorCode, nil) // 0
	code(t, "add offsets", c.addOffsets("with-offsets", grp, gepoch, "g"), nil)
	code(t, "txn offset commit", c.txnCommit("with-offsets", grp, gepoch, "g", "", -1, "ox", 42), nil)
	if err := testbroker.Close(b1); err != nil {
		t.Fatal(err)
	}

	clock.Advance(30 * time.Second)
	b2 := testbroker.Start(t, cfg)
	c2 := dialRaw(t, b2.Addr().String())
	fetch := func(topic string) kmsg.FetchResponseTopicPartition {
		return c2.request(withIsolation(fetchReq(topic, 0, 0), 1)).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	}
	if p := fetch("tx"); p.HighWatermark != 4 || p.LastStableOffset != 3 {
		t.Fatalf("after restart: HW %d LSO %d; want 4 and 3 (open still open)", p.HighWatermark, p.LastStableOffset)
	}
	if p := fetch("ox"); p.HighWatermark != 1 || p.LastStableOffset != 0 {
		t.Fatalf("after restart: ox HW %d LSO %d; want 1 and 0 (with-offsets still open)", p.HighWatermark, p.LastStableOffset)
	}
	c2.wantOffset("pending after restart", "g", "ox", true, -1, kerr.UnstableOffsetCommit)
	code(t, "commit with-offsets after restart", c2.endTxn("with-offsets", grp, gepoch, true), nil)
	c2.wantOffset("committed after restart", "g", "ox", true, 42, nil)
	if p := fetch("ox"); p.HighWatermark != 2 || p.LastStableOffset != 2 {
		t.Fatalf("after the commit: ox HW %d LSO %d; want 2 and 2", p.HighWatermark, p.LastStableOffset)
	}
	// Its minute runs out 30 s after the restart; the clean-up runs every
	// 10 s.
	clock.Advance(40 * time.Second)
	p := fetch("tx")
	if p.HighWatermark != 5 || p.LastStableOffset != 5 {
		t.Fatalf("after the timeout: HW %d LSO %d, want 5 and 5 (an ABORT marker at 4)", p.HighWatermark, p.LastStableOffset)
	}
	if len(p.AbortedTransactions) != 1 || p.AbortedTransactions[0].ProducerID != open || p.AbortedTransactions[0].FirstOffset != 3 {
		t.Fatalf("aborted transactions %+v, want producer %d from offset 3", p.AbortedTransactions, open)
	}
	// The timeout raised the epoch: the old producer is fenced.
	wantCode(t, "end after the timeout", c2.endTxn("open", open, oepoch, true), kerr.ProducerFenced)
}
