package broker_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/batchtest"
)

// TestTxnVersionFeature: transaction-version. ApiVersions supports
// transaction.version 0-2 and finalizes the configured level (2 unless
// set; none listed at 0), and serves the transactional APIs up to the
// versions of KIP-890 part 2, short of the broker-to-broker ones.
func TestTxnVersionFeature(t *testing.T) {
	for _, tc := range []struct {
		level     string
		finalized int16 // 0: not listed
	}{{"", 2}, {"2", 2}, {"1", 1}, {"0", 0}} {
		cfg := broker.Config{}
		if tc.level != "" {
			cfg.Props = map[string]string{"transaction.version": tc.level}
		}
		_, addr := startBroker(t, cfg)
		ctx, cl, _ := newAdmin(t, addr)
		resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		var supported, finalized []string
		for _, f := range resp.SupportedFeatures {
			if f.Name == "transaction.version" {
				supported = append(supported, fmt.Sprintf("%d-%d", f.MinVersion, f.MaxVersion))
			}
		}
		for _, f := range resp.FinalizedFeatures {
			if f.Name == "transaction.version" {
				finalized = append(finalized, fmt.Sprintf("%d-%d", f.MinVersionLevel, f.MaxVersionLevel))
			}
		}
		if !slices.Equal(supported, []string{"0-2"}) {
			t.Errorf("level %q: supported %v, want [0-2]", tc.level, supported)
		}
		var wantFinal []string
		if tc.finalized > 0 {
			wantFinal = []string{fmt.Sprintf("%d-%d", tc.finalized, tc.finalized)}
		}
		if !slices.Equal(finalized, wantFinal) {
			t.Errorf("level %q: finalized %v, want %v", tc.level, finalized, wantFinal)
		}
		want := map[int16]int16{
			int16(kmsg.AddPartitionsToTxn): 3,
			int16(kmsg.AddOffsetsToTxn):    4,
			int16(kmsg.EndTxn):             5,
			int16(kmsg.TxnOffsetCommit):    6,
			int16(kmsg.Produce):            13,
		}
		for _, k := range resp.ApiKeys {
			if top, ok := want[k.ApiKey]; ok {
				if k.MaxVersion != top {
					t.Errorf("%s advertised up to v%d, want v%d", kmsg.NameForKey(k.ApiKey), k.MaxVersion, top)
				}
				delete(want, k.ApiKey)
			}
		}
		for k := range want {
			t.Errorf("%s not advertised", kmsg.NameForKey(k))
		}
	}
}

// TestTxnV2Raw: produce-implicit-add, txn-offset-commit-implicit,
// end-txn-bump. A transaction run with no AddPartitionsToTxn or
// AddOffsetsToTxn: the produce and the offset commit join it themselves,
// EndTxn v5 commits it under a raised epoch that fences the old one, its
// retry answers the same, and an abort with nothing ongoing raises the
// epoch again without a marker.
func TestTxnV2Raw(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	c := dialRaw(t, addr)
	c.createTopics("v2in", "v2out")

	pid, e0, ec := c.initTxn("v2", 60_000)
	code(t, "init", ec, nil)
	produce := func(epoch int16, seq int32) int16 {
		req := produceReq("v2out", 0, -1, batchtest.Transactional(pid, epoch, seq, 2).Build())
		req.SetVersion(12)
		req.TransactionID = kmsg.StringPtr("v2")
		return c.request(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}
	code(t, "Produce v12 to a partition not added", produce(e0, 0), nil)
	code(t, "TxnOffsetCommit v5 for a group not added", c.txnCommitAt(5, "v2", pid, e0, "v2g", "", -1, "v2in", 7), nil)
	c.wantOffset("require-stable while the commit is pending", "v2g", "v2in", true, -1, kerr.UnstableOffsetCommit)
	if hw := listLatest(c, "v2out", 1); hw != 0 {
		t.Fatalf("LSO %d while the transaction is open, want 0", hw)
	}

	end := c.endTxnAt(5, "v2", pid, e0, true)
	code(t, "EndTxn v5 commit", end.ErrorCode, nil)
	if end.ProducerID != pid || end.ProducerEpoch != e0+1 {
		t.Fatalf("EndTxn v5 answered %d/%d, want %d/%d", end.ProducerID, end.ProducerEpoch, pid, e0+1)
	}
	e1 := end.ProducerEpoch
	if lso := listLatest(c, "v2out", 1); lso != 3 { // two records and the marker
		t.Fatalf("LSO after the commit %d, want 3", lso)
	}
	c.wantOffset("offset after the commit", "v2g", "v2in", true, 7, nil)
	code(t, "TxnOffsetCommit v6 (topic IDs) outside a transaction", c.txnCommitAt(6, "v2", pid, e0, "v2g", "", -1, "v2in", 8), kerr.ProducerFenced)
	marker := c.fetchAll("v2out", 0)[1]
	if marker.Attributes&0x20 == 0 || marker.ProducerEpoch != e1 {
		t.Fatalf("second batch: attributes %#x epoch %d, want a marker at epoch %d", marker.Attributes, marker.ProducerEpoch, e1)
	}

	retry := c.endTxnAt(5, "v2", pid, e0, true)
	code(t, "EndTxn v5 retried", retry.ErrorCode, nil)
	if retry.ProducerID != pid || retry.ProducerEpoch != e1 {
		t.Fatalf("retry answered %d/%d, want %d/%d", retry.ProducerID, retry.ProducerEpoch, pid, e1)
	}
	code(t, "produce at the old epoch", produce(e0, 2), kerr.InvalidProducerEpoch)
	code(t, "EndTxn v5 commit with nothing ongoing", c.endTxnAt(5, "v2", pid, e1, true).ErrorCode, kerr.InvalidTxnState)
	empty := c.endTxnAt(5, "v2", pid, e1, false)
	code(t, "EndTxn v5 abort with nothing ongoing", empty.ErrorCode, nil)
	if empty.ProducerEpoch != e1+1 {
		t.Fatalf("empty abort answered epoch %d, want %d", empty.ProducerEpoch, e1+1)
	}
	if lso := listLatest(c, "v2out", 1); lso != 3 {
		t.Fatalf("an empty abort wrote to the log: LSO %d, want 3", lso)
	}
	// The next transaction at the raised epoch starts from sequence 0, and
	// TxnOffsetCommit v6 names its topic by ID.
	code(t, "produce in the next transaction", produce(e1+1, 0), nil)
	code(t, "TxnOffsetCommit v6", c.txnCommitAt(6, "v2", pid, e1+1, "v2g", "", -1, "v2in", 9), nil)
	code(t, "TxnOffsetCommit v6, unknown topic ID", c.txnCommitAt(6, "v2", pid, e1+1, "v2g", "", -1, "", 9), kerr.UnknownTopicID)
	code(t, "EndTxn v5 commit of the second transaction", c.endTxnAt(5, "v2", pid, e1+1, true).ErrorCode, nil)
	c.wantOffset("offset committed through v6", "v2g", "v2in", true, 9, nil)
}

// TestTxnV1RulesBelowLevel2: transaction-version. With transaction.version
// finalized at 1, Produce v12 and TxnOffsetCommit v5 add nothing and
// EndTxn v5 keeps the epoch: the rules of the versions before.
func TestTxnV1RulesBelowLevel2(t *testing.T) {
	_, addr := startBroker(t, broker.Config{Props: map[string]string{"transaction.version": "1"}})
	c := dialRaw(t, addr)
	c.createTopics("v1in", "v1out")
	pid, e0, ec := c.initTxn("v1", 60_000)
	code(t, "init", ec, nil)
	req := produceReq("v1out", 0, -1, batchtest.Transactional(pid, e0, 0, 1).Build())
	req.SetVersion(12)
	req.TransactionID = kmsg.StringPtr("v1")
	code(t, "Produce v12 to a partition not added", c.request(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode, kerr.TransactionAbortable)
	code(t, "TxnOffsetCommit v5 for a group not added", c.txnCommitAt(5, "v1", pid, e0, "v1g", "", -1, "v1in", 7), kerr.InvalidTxnState)
	code(t, "add partition", c.addPartition("v1", pid, e0, "v1out", 0), nil)
	end := c.endTxnAt(5, "v1", pid, e0, false)
	code(t, "EndTxn v5 abort", end.ErrorCode, nil)
	if end.ProducerID != pid || end.ProducerEpoch != e0 {
		t.Fatalf("EndTxn v5 at level 1 answered %d/%d, want the epoch kept: %d/%d", end.ProducerID, end.ProducerEpoch, pid, e0)
	}
}
