package broker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/batchtest"
	"github.com/sharebroker/sharebroker/locktimer"
)

// Transactions over raw connections on the manual clock
// (docs/transactions.md).

func (c *rawConn) initTxn(id string, timeoutMs int32) (int64, int16, int16) {
	c.t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.SetVersion(5)
	req.TransactionalID = kmsg.StringPtr(id)
	req.TransactionTimeoutMillis = timeoutMs
	req.ProducerID, req.ProducerEpoch = -1, -1
	resp := c.request(req).(*kmsg.InitProducerIDResponse)
	return resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode
}

func (c *rawConn) addPartition(id string, pid int64, epoch int16, topic string, partition int32) int16 {
	c.t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(3)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	req.Topics = append(req.Topics, rt)
	return c.request(req).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode
}

func (c *rawConn) addOffsets(id string, pid int64, epoch int16, group string) int16 {
	c.t.Helper()
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.SetVersion(4)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, pid, epoch, group
	return c.request(req).(*kmsg.AddOffsetsToTxnResponse).ErrorCode
}

func (c *rawConn) endTxn(id string, pid int64, epoch int16, commit bool) int16 {
	c.t.Helper()
	return c.endTxnAt(4, id, pid, epoch, commit).ErrorCode
}

// endTxnAt sends EndTxn at version and returns the answer.
func (c *rawConn) endTxnAt(version int16, id string, pid int64, epoch int16, commit bool) *kmsg.EndTxnResponse {
	c.t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.SetVersion(version)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	return c.request(req).(*kmsg.EndTxnResponse)
}

func (c *rawConn) txnCommit(id string, pid int64, epoch int16, group, member string, generation int32, topic string, offset int64) int16 {
	c.t.Helper()
	return c.txnCommitAt(4, id, pid, epoch, group, member, generation, topic, offset)
}

// txnCommitAt sends TxnOffsetCommit at version (below v6: topics by name)
// for partition 0 of topic and returns its error code.
func (c *rawConn) txnCommitAt(version int16, id string, pid int64, epoch int16, group, member string, generation int32, topic string, offset int64) int16 {
	c.t.Helper()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.SetVersion(version)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	req.Group, req.MemberID, req.Generation = group, member, generation
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	if version >= 6 && topic != "" {
		rt.TopicID = c.topicID(topic) // v6 names topics by ID; "" leaves it zero, unknown
	}
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return c.request(req).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}

// topicID returns topic's ID from Metadata.
func (c *rawConn) topicID(topic string) [16]byte {
	c.t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	return c.request(req).(*kmsg.MetadataResponse).Topics[0].TopicID
}

// offsetFetch returns partition 0's committed offset and error code.
func (c *rawConn) offsetFetch(group, topic string, requireStable bool) (int64, int16) {
	c.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(7)
	req.Group, req.RequireStable = group, requireStable
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	p := c.request(req).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

// wantOffset checks partition 0's committed offset and error code for
// group and topic, fetched with or without RequireStable.
func (c *rawConn) wantOffset(what, group, topic string, requireStable bool, wantOffset int64, wantErr *kerr.Error) {
	c.t.Helper()
	off, ec := c.offsetFetch(group, topic, requireStable)
	wantCode := int16(0)
	if wantErr != nil {
		wantCode = wantErr.Code
	}
	if off != wantOffset || ec != wantCode {
		c.t.Fatalf("%s: offset %d error %v, want %d and %v", what, off, kerr.ErrorForCode(ec), wantOffset, wantErr)
	}
}

// TestTxnZombieFencingRaw: fenced, txn-offset-commit, require-stable,
// end-txn.
func TestTxnZombieFencingRaw(t *testing.T) {
	clock := locktimer.NewManualClock(time.UnixMilli(1_700_000_000_000))
	_, addr := startBroker(t, broker.Config{Clock: clock})
	c := dialRaw(t, addr)
	c.createTopics("zin", "zout")

	// A member of group zg at generation 1 (no initial delay by default).
	join := joinReq(9, "zg", "")
	join.MemberID = c.request(join).(*kmsg.JoinGroupResponse).MemberID
	jr := c.request(join).(*kmsg.JoinGroupResponse)
	code(t, "join", jr.ErrorCode, nil)
	me, gen := jr.MemberID, jr.Generation
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.SetVersion(5)
	sync.Group, sync.MemberID, sync.Generation = "zg", me, gen
	code(t, "sync", c.request(sync).(*kmsg.SyncGroupResponse).ErrorCode, nil)

	pid, epoch, ec := c.initTxn("z", 60_000)
	code(t, "init", ec, nil)
	code(t, "add partition", c.addPartition("z", pid, epoch, "zout", 0), nil)
	code(t, "add offsets", c.addOffsets("z", pid, epoch, "zg"), nil)

	// A zombie's commit from an old generation stores nothing.
	code(t, "old generation", c.txnCommit("z", pid, epoch, "zg", me, gen-1, "zin", 99), kerr.IllegalGeneration)
	code(t, "unknown member", c.txnCommit("z", pid, epoch, "zg", "ghost", gen, "zin", 99), kerr.UnknownMemberID)
	code(t, "group not added", c.txnCommit("z", pid, epoch, "other", "", -1, "zin", 99), kerr.InvalidTxnState)
	c.wantOffset("after rejected commits", "zg", "zin", true, -1, nil)

	// The member's own commit is pending until EndTxn.
	code(t, "commit", c.txnCommit("z", pid, epoch, "zg", me, gen, "zin", 5), nil)
	c.wantOffset("require-stable with a pending commit", "zg", "zin", true, -1, kerr.UnstableOffsetCommit)
	c.wantOffset("pending commit visible", "zg", "zin", false, -1, nil)
	produced := c.produce("zout", 0, batchtest.Transactional(pid, epoch, 0, 2).Build())
	code(t, "transactional produce", produced.ErrorCode, nil)
	// produce-txn-errors: below Produce v12 nothing adds the partition;
	// v11 learnt KIP-890's TRANSACTION_ABORTABLE for it.
	notAdded := func(version int16) int16 {
		req := produceReq("zin", 0, -1, batchtest.Transactional(pid, epoch, 0, 1).Build())
		req.SetVersion(version)
		return c.request(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}
	code(t, "Produce v10 to a partition not added", notAdded(10), kerr.InvalidTxnState)
	code(t, "Produce v11 to a partition not added", notAdded(11), kerr.TransactionAbortable)

	// A new producer for the same ID fences the old one and aborts its
	// transaction: the pending offset is dropped, an ABORT marker written.
	pid2, epoch2, ec := c.initTxn("z", 60_000)
	code(t, "second init", ec, nil)
	if pid2 != pid || epoch2 != epoch+1 {
		t.Fatalf("second init: %d/%d, want %d/%d", pid2, epoch2, pid, epoch+1)
	}
	code(t, "zombie end", c.endTxn("z", pid, epoch, true), kerr.ProducerFenced)
	code(t, "zombie add", c.addPartition("z", pid, epoch, "zout", 0), kerr.ProducerFenced)
	code(t, "zombie produce", c.produce("zout", 0, batchtest.Transactional(pid, epoch, 2, 1).Build()).ErrorCode, kerr.InvalidProducerEpoch)
	code(t, "wrong producer ID", c.endTxn("z", pid+100, epoch2, true), kerr.InvalidProducerIDMapping)
	c.wantOffset("after abort", "zg", "zin", true, -1, nil)
	resp := c.request(withIsolation(fetchReq("zout", 0, 0), 1)).(*kmsg.FetchResponse)
	p := resp.Topics[0].Partitions[0]
	if p.LastStableOffset != 3 || len(p.AbortedTransactions) != 1 || p.AbortedTransactions[0].ProducerID != pid || p.AbortedTransactions[0].FirstOffset != 0 {
		t.Fatalf("read_committed fetch: LSO %d aborted %+v", p.LastStableOffset, p.AbortedTransactions)
	}

	// The new producer commits: the offset becomes visible.
	code(t, "add offsets", c.addOffsets("z", pid2, epoch2, "zg"), nil)
	code(t, "commit", c.txnCommit("z", pid2, epoch2, "zg", me, gen, "zin", 7), nil)
	code(t, "end", c.endTxn("z", pid2, epoch2, true), nil)
	code(t, "end retried", c.endTxn("z", pid2, epoch2, true), nil)
	code(t, "abort after commit", c.endTxn("z", pid2, epoch2, false), kerr.InvalidTxnState)
	c.wantOffset("after commit", "zg", "zin", true, 7, nil)
}

func withIsolation(req *kmsg.FetchRequest, level int8) *kmsg.FetchRequest {
	req.IsolationLevel = level
	return req
}

// TestTxnTimeoutAbortsRaw: txn-timeout, lso, read-committed-fetch,
// read-committed-list, init-timeout.
func TestTxnTimeoutAbortsRaw(t *testing.T) {
	clock := locktimer.NewManualClock(time.UnixMilli(1_700_000_000_000))
	_, addr := startBroker(t, broker.Config{Clock: clock})
	c := dialRaw(t, addr)
	c.createTopics("to")

	if _, _, ec := c.initTxn("t", 900_001); ec != kerr.InvalidTransactionTimeout.Code {
		t.Fatalf("timeout above the maximum: %v", kerr.ErrorForCode(ec))
	}
	pid, epoch, ec := c.initTxn("t", 15_000)
	code(t, "init", ec, nil)
	code(t, "add", c.addPartition("t", pid, epoch, "to", 0), nil)
	code(t, "produce", c.produce("to", 0, batchtest.Transactional(pid, epoch, 0, 3).Build()).ErrorCode, nil)
	code(t, "plain produce", c.produce("to", 0, batchtest.Plain(1).Build()).ErrorCode, nil)

	p := c.request(withIsolation(fetchReq("to", 0, 0), 1)).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if p.LastStableOffset != 0 || p.HighWatermark != 4 || len(p.RecordBatches) != 0 {
		t.Fatalf("open transaction: LSO %d HW %d, %d bytes returned", p.LastStableOffset, p.HighWatermark, len(p.RecordBatches))
	}
	if off := listLatest(c, "to", 1); off != 0 {
		t.Fatalf("read_committed latest = %d, want the LSO 0", off)
	}

	clock.Advance(10 * time.Second) // first check: 10 s open, not timed out
	code(t, "still open", c.addPartition("t", pid, epoch, "to", 0), nil)
	clock.Advance(10 * time.Second) // second check: 20 s > 15 s, aborted
	code(t, "end after timeout", c.endTxn("t", pid, epoch, true), kerr.ProducerFenced)
	code(t, "produce after timeout", c.produce("to", 0, batchtest.Transactional(pid, epoch, 3, 1).Build()).ErrorCode, kerr.InvalidProducerEpoch)

	p = c.request(withIsolation(fetchReq("to", 0, 0), 1)).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if p.LastStableOffset != 5 || len(p.AbortedTransactions) != 1 || p.AbortedTransactions[0].FirstOffset != 0 {
		t.Fatalf("after timeout: LSO %d aborted %+v", p.LastStableOffset, p.AbortedTransactions)
	}
	batches := splitBatches(t, p.RecordBatches)
	if last := batches[len(batches)-1]; last.Attributes&0x20 == 0 || last.ProducerEpoch != epoch+1 {
		t.Fatalf("last batch %+v, want an ABORT marker at epoch %d", last, epoch+1)
	}
	if off := listLatest(c, "to", 1); off != 5 {
		t.Fatalf("read_committed latest = %d, want 5", off)
	}
}

// listLatest answers ListOffsets latest for partition 0 at isolation.
func listLatest(c *rawConn, topic string, isolation int8) int64 {
	c.t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(7)
	req.ReplicaID, req.IsolationLevel = -1, isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return c.request(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].Offset
}

// TestTxnInspectionRaw: describe-transactions, list-transactions,
// describe-producers.
func TestTxnInspectionRaw(t *testing.T) {
	clock := locktimer.NewManualClock(time.UnixMilli(1_700_000_000_000))
	_, addr := startBroker(t, broker.Config{Clock: clock})
	c := dialRaw(t, addr)
	c.createTopics("insp")
	pid, epoch, ec := c.initTxn("i", 30_000)
	code(t, "init", ec, nil)
	idle, _, _ := c.initTxn("idle", 30_000)
	code(t, "add", c.addPartition("i", pid, epoch, "insp", 0), nil)
	code(t, "plain produce", c.produce("insp", 0, batchtest.Plain(1).Build()).ErrorCode, nil)
	code(t, "produce", c.produce("insp", 0, batchtest.Transactional(pid, epoch, 0, 2).Build()).ErrorCode, nil)
	clock.Advance(5 * time.Second)

	dreq := kmsg.NewPtrDescribeTransactionsRequest()
	dreq.TransactionalIDs = []string{"i", "nope"}
	states := c.request(dreq).(*kmsg.DescribeTransactionsResponse).TransactionStates
	s := states[0]
	if s.ErrorCode != 0 || s.State != "Ongoing" || s.ProducerID != pid || s.TimeoutMillis != 30_000 ||
		s.StartTimestamp != 1_700_000_000_000 || len(s.Topics) != 1 || s.Topics[0].Topic != "insp" || len(s.Topics[0].Partitions) != 1 {
		t.Fatalf("describe: %+v", s)
	}
	code(t, "describe unknown", states[1].ErrorCode, kerr.TransactionalIDNotFound)

	lreq := kmsg.NewPtrListTransactionsRequest()
	lreq.SetVersion(1)
	lreq.StateFilters = []string{"Ongoing", "Bogus"}
	lreq.DurationFilterMillis = -1
	lr := c.request(lreq).(*kmsg.ListTransactionsResponse)
	if len(lr.TransactionStates) != 1 || lr.TransactionStates[0].TransactionalID != "i" || len(lr.UnknownStateFilters) != 1 {
		t.Fatalf("list Ongoing: %+v", lr)
	}
	lreq.StateFilters, lreq.ProducerIDFilters = nil, []int64{idle}
	if lr := c.request(lreq).(*kmsg.ListTransactionsResponse); len(lr.TransactionStates) != 1 || lr.TransactionStates[0].TransactionState != "Empty" {
		t.Fatalf("list by producer ID: %+v", lr.TransactionStates)
	}
	lreq.ProducerIDFilters, lreq.DurationFilterMillis = nil, 10_000
	if lr := c.request(lreq).(*kmsg.ListTransactionsResponse); len(lr.TransactionStates) != 1 || lr.TransactionStates[0].TransactionalID != "idle" {
		t.Fatalf("list running over 10 s: %+v", lr.TransactionStates)
	}

	preq := kmsg.NewPtrDescribeProducersRequest()
	pt := kmsg.NewDescribeProducersRequestTopic()
	pt.Topic, pt.Partitions = "insp", []int32{0, 9}
	preq.Topics = append(preq.Topics, pt)
	parts := c.request(preq).(*kmsg.DescribeProducersResponse).Topics[0].Partitions
	if len(parts[0].ActiveProducers) != 1 {
		t.Fatalf("producers: %+v", parts[0])
	}
	if ap := parts[0].ActiveProducers[0]; ap.ProducerID != pid || ap.LastSequence != 1 || ap.CurrentTxnStartOffset != 1 {
		t.Fatalf("producer: %+v", ap)
	}
	code(t, "unknown partition", parts[1].ErrorCode, kerr.UnknownTopicOrPartition)
}

// join848 sends one ConsumerGroupHeartbeat for member id at epoch
// (0 joins) subscribed to topic, and returns the member's epoch.
func (c *rawConn) join848(group, id string, epoch int32, topic string) int32 {
	c.t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, id, epoch
	req.RebalanceTimeoutMillis = 30000
	req.SubscribedTopicNames = []string{topic}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp := c.request(req).(*kmsg.ConsumerGroupHeartbeatResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		c.t.Fatalf("consumer group heartbeat of %s: %v", id, err)
	}
	return resp.MemberEpoch
}

// TestTxnOffsetCommit848Raw (txn-offset-commit-848, require-stable,
// end-txn): transactional commits to a KIP-848 group are checked against
// the member's epoch, wait as pending until EndTxn, and are applied on
// commit and dropped on abort.
func TestTxnOffsetCommit848Raw(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	c := dialRaw(t, addr)
	c.createTopics("kin", "kout")
	const a, b = "member-a-0000000000000", "member-b-0000000000000"
	c.join848("kg", a, 0, "kin")
	c.join848("kg", b, 0, "kin") // the group's epoch moves to 2
	epoch := c.join848("kg", a, 1, "kin")
	if epoch != 2 {
		t.Fatalf("member a at epoch %d after b joined, want 2", epoch)
	}

	pid, pe, ec := c.initTxn("k", 60_000)
	code(t, "init", ec, nil)
	code(t, "add offsets", c.addOffsets("k", pid, pe, "kg"), nil)
	code(t, "older epoch", c.txnCommit("k", pid, pe, "kg", a, epoch-1, "kin", 99), kerr.IllegalGeneration)
	code(t, "newer epoch", c.txnCommit("k", pid, pe, "kg", a, epoch+1, "kin", 99), kerr.IllegalGeneration)
	code(t, "unknown member", c.txnCommit("k", pid, pe, "kg", "ghost", epoch, "kin", 99), kerr.UnknownMemberID)
	c.wantOffset("after rejected commits", "kg", "kin", true, -1, nil)

	code(t, "commit at the member's epoch", c.txnCommit("k", pid, pe, "kg", a, epoch, "kin", 5), nil)
	c.wantOffset("require-stable with a pending commit", "kg", "kin", true, -1, kerr.UnstableOffsetCommit)
	c.wantOffset("pending commit visible", "kg", "kin", false, -1, nil)
	code(t, "end commit", c.endTxn("k", pid, pe, true), nil)
	c.wantOffset("after commit", "kg", "kin", true, 5, nil)

	// A commit without member, instance or generation is not checked, even
	// with members; aborted, it is dropped.
	code(t, "add offsets", c.addOffsets("k", pid, pe, "kg"), nil)
	code(t, "unchecked commit", c.txnCommit("k", pid, pe, "kg", "", -1, "kin", 8), nil)
	code(t, "end abort", c.endTxn("k", pid, pe, false), nil)
	c.wantOffset("after abort", "kg", "kin", true, 5, nil)

	// A generation for a group that does not exist is ILLEGAL_GENERATION.
	code(t, "add offsets", c.addOffsets("k", pid, pe, "nogroup"), nil)
	code(t, "unknown group", c.txnCommit("k", pid, pe, "nogroup", a, 3, "kin", 1), kerr.IllegalGeneration)
}
