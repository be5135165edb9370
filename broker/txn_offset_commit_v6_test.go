package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
)

// Rule: txn-offset-commit-v6 (docs/transactions.md; KIP-1319, Kafka 4.4):
// from TxnOffsetCommit v6 the group's own errors come through as
// OffsetCommit gives them, where v0-v5 fold both into ILLEGAL_GENERATION
// (OffsetMetadataManager.validateTransactionalOffsetCommit;
// TxnOffsetCommitRequestTest.testTxnOffsetCommit's v6 cases): a KIP-848
// member's other epoch is STALE_MEMBER_EPOCH, a generation for a group that
// does not exist GROUP_ID_NOT_FOUND. A classic group's wrong generation
// stays ILLEGAL_GENERATION. Before this rule v6 answered ILLEGAL_GENERATION
// for the first two.
func TestTxnOffsetCommitV6GroupErrors(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	c := dialRaw(t, addr)
	c.createTopics("vin")
	const a = "member-a-0000000000000"
	epoch := c.join848("vg", a, 0, "vin")

	pid, pe, ec := c.initTxn("v", 60_000)
	code(t, "init", ec, nil)
	code(t, "add offsets", c.addOffsets("v", pid, pe, "vg"), nil)
	code(t, "add offsets", c.addOffsets("v", pid, pe, "nogroup"), nil)

	for _, tc := range []struct {
		name       string
		version    int16
		group      string
		generation int32
		want       *kerr.Error
	}{
		{"v5 older epoch", 5, "vg", epoch - 1, kerr.IllegalGeneration},
		{"v6 older epoch", 6, "vg", epoch - 1, kerr.StaleMemberEpoch},
		{"v6 newer epoch", 6, "vg", epoch + 1, kerr.StaleMemberEpoch},
		{"v5 unknown group", 5, "nogroup", 3, kerr.IllegalGeneration},
		{"v6 unknown group", 6, "nogroup", 3, kerr.GroupIDNotFound},
		{"v6 the member's epoch", 6, "vg", epoch, nil},
	} {
		code(t, tc.name, c.txnCommitAt(tc.version, "v", pid, pe, tc.group, a, tc.generation, "vin", 7), tc.want)
	}
	c.wantOffset("pending v6 commit", "vg", "vin", true, -1, kerr.UnstableOffsetCommit)
	code(t, "end commit", c.endTxn("v", pid, pe, true), nil)
	c.wantOffset("after commit", "vg", "vin", true, 7, nil)

	// A classic group's wrong generation is ILLEGAL_GENERATION at v6 too:
	// ClassicGroup.validateOffsetCommit throws it for every version.
	join := joinReq(9, "cg", "")
	join.MemberID = c.request(join).(*kmsg.JoinGroupResponse).MemberID
	jr := c.request(join).(*kmsg.JoinGroupResponse)
	code(t, "join", jr.ErrorCode, nil)
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.SetVersion(5)
	sync.Group, sync.MemberID, sync.Generation = "cg", jr.MemberID, jr.Generation
	code(t, "sync", c.request(sync).(*kmsg.SyncGroupResponse).ErrorCode, nil)
	code(t, "add offsets", c.addOffsets("v", pid, pe, "cg"), nil)
	code(t, "v6 classic old generation", c.txnCommitAt(6, "v", pid, pe, "cg", jr.MemberID, jr.Generation-1, "vin", 1), kerr.IllegalGeneration)
}
