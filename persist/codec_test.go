package persist

import (
	"reflect"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/txn"
)

// The translations between the domain types and durable's records lose
// nothing a restart needs: what is written reads back equal, zero times
// included (they are kept as 0).

func TestOffsetsRoundTrip(t *testing.T) {
	commit := time.UnixMilli(1_700_000_000_123)
	in := []group.StoredOffset{
		{Topic: "t", Partition: 1, Offset: 42, LeaderEpoch: 3, Metadata: "m", CommitTime: commit},
		{Topic: "u", Partition: 0, Offset: 7, LeaderEpoch: -1, CommitTime: commit, ExpireAt: commit.Add(time.Hour)},
	}
	if out := fromDurableOffsets(toDurableOffsets(in)); !reflect.DeepEqual(out, in) {
		t.Fatalf("offsets read back as %+v, want %+v", out, in)
	}
}

func TestTxnRoundTrip(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	tps := []txn.TopicPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 2}}
	for _, r := range []txn.Record{
		{TransactionalID: "empty", ProducerID: 5, PrevProducerID: -1, Epoch: 1, State: txn.Empty, Timeout: time.Minute,
			Updated: now, Partitions: []txn.TopicPartition{}},
		{TransactionalID: "ongoing", ProducerID: 6, PrevProducerID: -1, Epoch: 2, State: txn.Ongoing, Timeout: time.Minute,
			Started: now, Updated: now, TV2: true, Partitions: tps, Groups: []string{"g"}},
		{TransactionalID: "prepared", ProducerID: 7, PrevProducerID: 6, Epoch: 0, State: txn.PrepareCommit, Timeout: time.Minute,
			Started: now, Updated: now, Partitions: []txn.TopicPartition{},
			Pending: &txn.Completion{TransactionalID: "prepared", ProducerID: 7, Epoch: 0, Commit: true, Partitions: tps, Groups: []string{"g"}}},
	} {
		out, ok := fromDurableTxn(r.TransactionalID, toDurableTxn(r))
		if !ok || !reflect.DeepEqual(out, r) {
			t.Errorf("%s read back as %+v (%v), want %+v", r.TransactionalID, out, ok, r)
		}
	}
	if _, ok := fromDurableTxn("x", toDurableTxn(txn.Record{State: txn.State(99)})); ok {
		t.Errorf("a state with no name read back")
	}
}

func TestACLsRoundTrip(t *testing.T) {
	in := []acl.Binding{
		{ResourceType: acl.ResourceTopic, ResourceName: "t", PatternType: acl.PatternLiteral, Principal: "User:alice",
			Host: "*", Operation: acl.OpRead, Permission: acl.Allow},
		{ResourceType: acl.ResourceTopic, ResourceName: "p-", PatternType: acl.PatternPrefixed, Principal: "User:bob",
			Host: "10.0.0.1", Operation: acl.OpWrite, Permission: acl.Deny},
	}
	if out := fromDurableACLs(durableACLs(in)); !reflect.DeepEqual(out, in) {
		t.Fatalf("ACLs read back as %+v, want %+v", out, in)
	}
}
