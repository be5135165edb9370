package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/internal/batchtest"
	"github.com/sharebroker/sharebroker/txn"
)

// txnFuzzKeys are the APIs FuzzTxnRequests sends: InitProducerId,
// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit, Produce,
// and the classic JoinGroup, SyncGroup, OffsetCommit and OffsetFetch that a
// transactional consumer-producer mixes in.
var txnFuzzKeys = []int16{22, 24, 25, 26, 28, 0, 11, 14, 8, 9}

// Producer IDs are a counter from 0, so the first InitProducerId of an
// input gets producer 0 at epoch 0.

func seedInitPID(v int16, txnID string, timeoutMs int32, pid int64, epoch int16) *kmsg.InitProducerIDRequest {
	r := kmsg.NewPtrInitProducerIDRequest()
	r.Version, r.TransactionalID, r.TransactionTimeoutMillis = v, kmsg.StringPtr(txnID), timeoutMs
	r.ProducerID, r.ProducerEpoch = pid, epoch
	return r
}

func seedAddPartitions(v int16, txnID string, pid int64, epoch int16, parts ...int32) *kmsg.AddPartitionsToTxnRequest {
	r := kmsg.NewPtrAddPartitionsToTxnRequest()
	r.Version, r.TransactionalID, r.ProducerID, r.ProducerEpoch = v, txnID, pid, epoch
	t := kmsg.NewAddPartitionsToTxnRequestTopic()
	t.Topic, t.Partitions = "t", parts
	r.Topics = append(r.Topics, t)
	return r
}

func seedAddOffsets(v int16, txnID string, pid int64, epoch int16, group string) *kmsg.AddOffsetsToTxnRequest {
	r := kmsg.NewPtrAddOffsetsToTxnRequest()
	r.Version, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = v, txnID, pid, epoch, group
	return r
}

func seedEndTxn(v int16, txnID string, pid int64, epoch int16, commit bool) *kmsg.EndTxnRequest {
	r := kmsg.NewPtrEndTxnRequest()
	r.Version, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = v, txnID, pid, epoch, commit
	return r
}

func seedTxnCommit(v int16, txnID, group string, pid int64, epoch int16, member string, gen int32) *kmsg.TxnOffsetCommitRequest {
	r := kmsg.NewPtrTxnOffsetCommitRequest()
	r.Version, r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch = v, txnID, group, pid, epoch
	r.MemberID, r.Generation = member, gen
	t := kmsg.NewTxnOffsetCommitRequestTopic()
	t.Topic = "t"
	p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset = 0, 4
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

// seedProduce sends one transactional batch of producer pid at epoch to
// partition part of "t".
func seedProduce(v int16, txnID string, pid int64, epoch int16, seq int32, part int32) *kmsg.ProduceRequest {
	r := kmsg.NewPtrProduceRequest()
	r.Version, r.TransactionID, r.Acks, r.TimeoutMillis = v, kmsg.StringPtr(txnID), -1, 1000
	t := kmsg.NewProduceRequestTopic()
	t.Topic, t.TopicID = "t", fuzzTopicID
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition, p.Records = part, batchtest.Transactional(pid, epoch, seq, 2).Build()
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func txnSeeds() [][]fuzzStep {
	return [][]fuzzStep{
		// A committed transaction with records and offsets.
		stepsOf(seedInitPID(0, "tx", 60_000, -1, -1), seedAddPartitions(0, "tx", 0, 0, 0, 1), seedProduce(3, "tx", 0, 0, 0, 0),
			seedProduce(9, "tx", 0, 0, 0, 1), seedAddOffsets(0, "tx", 0, 0, "cg"), seedTxnCommit(0, "tx", "cg", 0, 0, "", -1),
			seedFetch(7, "cg", true), seedEndTxn(0, "tx", 0, 0, true), seedEndTxn(0, "tx", 0, 0, true), seedFetch(7, "cg", true)),
		// An aborted one, committing for a classic member at its
		// generation, on the newest versions.
		stepsOf(seedJoin(9, "cg", "", nil), seedJoin(9, "cg", "c-1", nil), seedSync(5, "cg", "c-1", 1, "c-1"),
			seedInitPID(5, "tx", 60_000, -1, -1), seedAddPartitions(3, "tx", 0, 0, 0), seedProduce(13, "tx", 0, 0, 0, 0),
			seedAddOffsets(4, "tx", 0, 0, "cg"), seedTxnCommit(4, "tx", "cg", 0, 0, "c-1", 1), seedCommit(9, "cg", "c-1", 1),
			seedEndTxn(4, "tx", 0, 0, false), seedFetch(9, "cg", true)),
		// A transaction that times out is aborted and its producer
		// fenced; KIP-360 re-initialises with the bumped epoch.
		append(stepsOf(seedInitPID(3, "tx", 1_000, -1, -1), seedAddPartitions(2, "tx", 0, 0, 1), seedProduce(8, "tx", 0, 0, 0, 1)),
			clockStep(15*time.Second), stepOf(seedEndTxn(3, "tx", 0, 0, true)), stepOf(seedInitPID(4, "tx", 1_000, 0, 1)),
			stepOf(seedAddPartitions(2, "tx", 0, 2, 0))),
		// A second InitProducerId fences the open transaction; the old
		// epoch's requests are refused.
		stepsOf(seedInitPID(1, "tx", 60_000, -1, -1), seedAddPartitions(1, "tx", 0, 0, 0), seedAddOffsets(2, "tx", 0, 0, "cg"),
			seedInitPID(2, "tx", 60_000, -1, -1), seedProduce(5, "tx", 0, 0, 0, 0), seedTxnCommit(2, "tx", "cg", 0, 0, "", -1),
			seedEndTxn(2, "tx", 0, 1, false), seedEndTxn(1, "tx", 0, 0, true)),
		// Produce to a partition never added, then a commit with
		// nothing added.
		stepsOf(seedInitPID(0, "tx", 60_000, -1, -1), seedProduce(7, "tx", 0, 0, 0, 1), seedEndTxn(0, "tx", 0, 0, true),
			seedTxnCommit(3, "tx", "cg", 0, 0, "c-9", 3)),
	}
}

// finishTxns lets every transaction time out (txn-timeout): once the
// clock passes transaction.max.timeout.ms and a clean-up, none is Ongoing
// and no partition's last stable offset lags its high watermark, so no
// transactional batch was let in without the coordinator knowing its
// transaction.
func finishTxns(s *fuzzSeq) {
	s.t.Helper()
	ms := func(name string) time.Duration { return time.Duration(s.b.cfg.props.Int64(name)) * time.Millisecond }
	s.clock.Advance(ms("transaction.max.timeout.ms") + 2*ms("transaction.abort.timed.out.transaction.cleanup.interval.ms"))
	s.check()
	for _, d := range s.b.txns.List() {
		if d.State == txn.Ongoing {
			s.t.Fatalf("transaction %s still Ongoing after its timeout", d.TransactionalID)
		}
	}
	for _, p := range s.b.store.Topic("t").Partitions() {
		if o := p.Offsets(); o.LastStable != o.HighWatermark {
			s.t.Fatalf("t-%d: last stable offset %d below the high watermark %d with no transaction open", p.Index, o.LastStable, o.HighWatermark)
		}
	}
}

// FuzzTxnRequests runs sequences of transaction requests, with Produce of
// transactional batches and the classic group requests a transactional
// consumer sends, against one broker per input: no handler may panic, hang,
// return an error or an answer that does not encode; after every step the
// transaction coordinator's and groups' invariants hold
// (txn.Coordinator.CheckInvariants) and, with no call running, no
// transaction is left in PrepareCommit or PrepareAbort; at the end every
// transaction times out and leaves no partition's last stable offset behind
// (finishTxns), the transactions and groups still describe, and the broker
// closes.
func FuzzTxnRequests(f *testing.F) {
	for _, s := range txnSeeds() {
		f.Add(encodeSteps(f, txnFuzzKeys, 0, s...))
	}
	// An idle transactional ID is forgotten; its producer ID no longer
	// maps to it.
	f.Add(encodeSteps(f, txnFuzzKeys, fuzzShortTxnIDs, append(stepsOf(seedInitPID(0, "tx", 60_000, -1, -1)), clockStep(2*time.Minute),
		stepOf(seedAddPartitions(0, "tx", 0, 0, 0)), stepOf(seedInitPID(0, "tx", 60_000, -1, -1)))...))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzSequence(t, txnFuzzKeys, data, finishTxns)
	})
}
