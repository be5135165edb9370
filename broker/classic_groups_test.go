package broker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/locktimer"
)

// Classic groups and committed offsets over raw connections, on the manual
// clock: the rules of docs/groups.md as a client sees them on the wire.

// consumerMeta is a consumer protocol subscription (v0) of topics.
func consumerMeta(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return m.AppendTo(nil)
}

func joinReq(version int16, group, member string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.SetVersion(version)
	req.Group, req.MemberID, req.ProtocolType = group, member, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10_000, 30_000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", consumerMeta("t")
	req.Protocols = append(req.Protocols, p)
	return req
}

func code(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	var wantCode int16
	if want != nil {
		wantCode = want.Code
	}
	if got != wantCode {
		t.Fatalf("%s: error %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

func describeClassic(c *rawConn, version int16, group string) kmsg.DescribeGroupsResponseGroup {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.SetVersion(version)
	req.Groups = []string{group}
	return c.request(req).(*kmsg.DescribeGroupsResponse).Groups[0]
}

// awaitState polls DescribeGroups until group is in state, bounded.
func awaitState(t *testing.T, c *rawConn, group, state string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if got := describeClassic(c, 5, group).State; got == state {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %s never reached %s", group, state)
		case <-time.After(time.Millisecond):
		}
	}
}

// test-defaults: group.initial.rebalance.delay.ms is 0 unless set, so a
// lone member's join completes at once, without the clock moving.
func TestClassicNoInitialDelayByDefault(t *testing.T) {
	clock := locktimer.NewManualClock(time.UnixMilli(1_700_000_000_000))
	_, addr := startBroker(t, broker.Config{Clock: clock})
	c := dialRaw(t, addr)
	c.createTopics("t")
	join := joinReq(9, "g", "")
	join.MemberID = c.request(join).(*kmsg.JoinGroupResponse).MemberID
	corr := c.send(join)
	jr := c.recv(join, corr, 10*time.Second).(*kmsg.JoinGroupResponse)
	code(t, "join", jr.ErrorCode, nil)
	if jr.Generation != 1 || jr.LeaderID != jr.MemberID {
		t.Fatalf("join answered generation %d, leader %q; want generation 1 led by %q", jr.Generation, jr.LeaderID, jr.MemberID)
	}
	if got := clock.Now(); !got.Equal(time.UnixMilli(1_700_000_000_000)) {
		t.Fatalf("the clock moved to %v", got)
	}
}

func TestClassicGroupLifecycleRaw(t *testing.T) {
	clock := locktimer.NewManualClock(time.UnixMilli(1_700_000_000_000))
	// Kafka's initial delay, to see the join wait for it (initial-delay).
	_, addr := startBroker(t, broker.Config{Clock: clock, Props: map[string]string{"num.partitions": "3", "group.initial.rebalance.delay.ms": "3000"}})
	c, admin := dialRaw(t, addr), dialRaw(t, addr)
	c.createTopics("t")

	// member-id-required (v4+).
	join := joinReq(9, "g", "")
	jr := c.request(join).(*kmsg.JoinGroupResponse)
	code(t, "first join", jr.ErrorCode, kerr.MemberIDRequired)
	if !strings.HasPrefix(jr.MemberID, "raw-test-") {
		t.Fatalf("member ID %q, want raw-test-<uuid>", jr.MemberID)
	}
	// initial-delay: the join waits until the test advances the clock.
	join.MemberID = jr.MemberID
	corr := c.send(join)
	awaitState(t, admin, "g", "PreparingRebalance")
	clock.Advance(3 * time.Second)
	jr = c.recv(join, corr, 10*time.Second).(*kmsg.JoinGroupResponse)
	code(t, "join", jr.ErrorCode, nil)
	if jr.Generation != 1 || jr.LeaderID != jr.MemberID || len(jr.Members) != 1 || *jr.Protocol != "range" || *jr.ProtocolType != "consumer" {
		t.Fatalf("join answer: %+v", jr)
	}
	me := jr.MemberID

	// sync: the leader's assignment comes back.
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.SetVersion(5)
	sync.Group, sync.MemberID, sync.Generation = "g", me, 1
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = me, []byte("mine")
	sync.GroupAssignment = append(sync.GroupAssignment, a)
	sr := c.request(sync).(*kmsg.SyncGroupResponse)
	code(t, "sync", sr.ErrorCode, nil)
	if string(sr.MemberAssignment) != "mine" || *sr.Protocol != "range" {
		t.Fatalf("sync answer: %+v", sr)
	}

	// heartbeat.
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.SetVersion(4)
	hb.Group, hb.MemberID, hb.Generation = "g", me, 1
	code(t, "heartbeat", c.request(hb).(*kmsg.HeartbeatResponse).ErrorCode, nil)
	hb.Generation = 0
	code(t, "stale heartbeat", c.request(hb).(*kmsg.HeartbeatResponse).ErrorCode, kerr.IllegalGeneration)
	hb.Generation = 1

	// describe and list.
	d := describeClassic(admin, 5, "g")
	if d.State != "Stable" || d.ProtocolType != "consumer" || d.Protocol != "range" || len(d.Members) != 1 ||
		string(d.Members[0].MemberAssignment) != "mine" || d.Members[0].ClientID != "raw-test" || d.Members[0].ClientHost != "/127.0.0.1" {
		t.Fatalf("describe: %+v", d)
	}
	if d := describeClassic(admin, 6, "nope"); d.State != "Dead" || d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe unknown v6: %+v", d)
	}
	if d := describeClassic(admin, 5, "nope"); d.State != "Dead" || d.ErrorCode != 0 {
		t.Fatalf("describe unknown v5: %+v", d)
	}
	list := kmsg.NewPtrListGroupsRequest()
	list.SetVersion(5)
	list.TypesFilter = []string{"Classic"}
	lr := admin.request(list).(*kmsg.ListGroupsResponse)
	if len(lr.Groups) != 1 || lr.Groups[0].Group != "g" || lr.Groups[0].GroupType != "classic" || lr.Groups[0].GroupState != "Stable" || lr.Groups[0].ProtocolType != "consumer" {
		t.Fatalf("list: %+v", lr.Groups)
	}
	list.TypesFilter = []string{"share"}
	if lr := admin.request(list).(*kmsg.ListGroupsResponse); len(lr.Groups) != 0 {
		t.Fatalf("list share: %+v", lr.Groups)
	}

	// delete refuses a group with members.
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.SetVersion(2)
	del.Groups = []string{"g"}
	code(t, "delete with members", admin.request(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, kerr.NonEmptyGroup)

	// session-expiry: 10 s without a heartbeat.
	clock.Advance(10*time.Second - time.Millisecond)
	code(t, "heartbeat in time", c.request(hb).(*kmsg.HeartbeatResponse).ErrorCode, nil)
	clock.Advance(10 * time.Second)
	code(t, "heartbeat after expiry", c.request(hb).(*kmsg.HeartbeatResponse).ErrorCode, kerr.UnknownMemberID)
	if d := describeClassic(admin, 5, "g"); d.State != "Empty" || len(d.Members) != 0 {
		t.Fatalf("after expiry: %+v", d)
	}

	// leave (v3+ batch) of members that are gone.
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.SetVersion(5)
	leave.Group = "g"
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = me
	leave.Members = append(leave.Members, lm)
	lv := c.request(leave).(*kmsg.LeaveGroupResponse)
	if lv.ErrorCode != 0 || len(lv.Members) != 1 || lv.Members[0].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("leave: %+v", lv)
	}

	code(t, "delete", admin.request(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, nil)
	if d := describeClassic(admin, 6, "g"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe after delete: %+v", d)
	}

	// one-kind: a share group's ID.
	shb := kmsg.NewPtrShareGroupHeartbeatRequest()
	shb.SetVersion(1)
	shb.GroupID, shb.MemberID, shb.SubscribedTopicNames = "sg", "AAAAAAAAAAAAAAAAAAAAAA", []string{"t"}
	code(t, "share join", c.request(shb).(*kmsg.ShareGroupHeartbeatResponse).ErrorCode, nil)
	sj := joinReq(9, "sg", "")
	code(t, "classic join on a share group", c.request(sj).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InconsistentGroupProtocol)
	if d := describeClassic(admin, 6, "sg"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe a share group: %+v", d)
	}
}

func commitReq(version int16, group, member string, gen int32, topic string, parts ...int32) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(version)
	req.Group, req.MemberID, req.Generation = group, member, gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for _, p := range parts {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = p, int64(100+p), 3
		rp.Metadata = kmsg.StringPtr("meta")
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func commitCodes(resp *kmsg.OffsetCommitResponse) []int16 {
	var codes []int16
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	return codes
}

func TestOffsetCommitFetchRaw(t *testing.T) {
	_, addr := startBroker(t, broker.Config{Props: map[string]string{"num.partitions": "3", "offset.metadata.max.bytes": "10"}})
	c := dialRaw(t, addr)
	c.createTopics("t")
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("t")
	md.Topics = append(md.Topics, mt)
	topicID := c.request(md).(*kmsg.MetadataResponse).Topics[0].TopicID

	// commit-checks for a group that does not exist.
	for _, tt := range []struct {
		version int16
		want    *kerr.Error
	}{{8, kerr.IllegalGeneration}, {9, kerr.GroupIDNotFound}} {
		resp := c.request(commitReq(tt.version, "g", "m", 5, "t", 0)).(*kmsg.OffsetCommitResponse)
		code(t, "commit with a generation to an unknown group", commitCodes(resp)[0], tt.want)
	}

	// commit-simple and commit-stored, with per-partition errors.
	req := commitReq(8, "g", "", -1, "t", 0, 1, 7)
	req.Topics[0].Partitions[1].Metadata = kmsg.StringPtr(strings.Repeat("x", 11))
	nope := kmsg.NewOffsetCommitRequestTopic()
	nope.Topic = "nope"
	nope.Partitions = req.Topics[0].Partitions[:1]
	req.Topics = append(req.Topics, nope)
	got := commitCodes(c.request(req).(*kmsg.OffsetCommitResponse))
	want := []int16{0, kerr.OffsetMetadataTooLarge.Code, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code}
	if len(got) != len(want) {
		t.Fatalf("codes %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("partition %d: error %v, want %v", i, kerr.ErrorForCode(got[i]), kerr.ErrorForCode(want[i]))
		}
	}

	// v10 by topic ID, and an ID no topic has.
	req = commitReq(10, "g", "", -1, "", 2)
	req.Topics[0].TopicID = topicID
	unknown := kmsg.NewOffsetCommitRequestTopic()
	unknown.TopicID = [16]byte{1}
	unknown.Partitions = req.Topics[0].Partitions
	req.Topics = append(req.Topics, unknown)
	resp := c.request(req).(*kmsg.OffsetCommitResponse)
	if codes := commitCodes(resp); codes[0] != 0 || codes[1] != kerr.UnknownTopicID.Code || resp.Topics[0].TopicID != topicID {
		t.Fatalf("v10 commit: %+v", resp.Topics)
	}

	// fetch v7: one group; partition 1 never committed.
	f := kmsg.NewPtrOffsetFetchRequest()
	f.SetVersion(7)
	f.Group = "g"
	ft := kmsg.NewOffsetFetchRequestTopic()
	ft.Topic, ft.Partitions = "t", []int32{0, 1, 2}
	f.Topics = append(f.Topics, ft)
	fr := c.request(f).(*kmsg.OffsetFetchResponse)
	ps := fr.Topics[0].Partitions
	if fr.ErrorCode != 0 || ps[0].Offset != 100 || ps[0].LeaderEpoch != 3 || *ps[0].Metadata != "meta" || ps[1].Offset != -1 || ps[2].Offset != 102 {
		t.Fatalf("fetch v7: %+v", fr)
	}

	// one-kind: a share group's ID.
	shb := kmsg.NewPtrShareGroupHeartbeatRequest()
	shb.SetVersion(1)
	shb.GroupID, shb.MemberID, shb.SubscribedTopicNames = "sg", "AAAAAAAAAAAAAAAAAAAAAA", []string{"t"}
	code(t, "share join", c.request(shb).(*kmsg.ShareGroupHeartbeatResponse).ErrorCode, nil)
	code(t, "commit to a share group", commitCodes(c.request(commitReq(8, "sg", "", -1, "t", 0)).(*kmsg.OffsetCommitResponse))[0], kerr.GroupIDNotFound)

	// fetch v8+: several groups; v10 names topics by ID; null topics is
	// every committed partition.
	f = kmsg.NewPtrOffsetFetchRequest()
	f.SetVersion(10)
	for _, g := range []string{"g", "unknown", "sg"} {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.TopicID, gt.Partitions = topicID, []int32{0, 1}
		rg.Topics = append(rg.Topics, gt)
		f.Groups = append(f.Groups, rg)
	}
	all := kmsg.NewOffsetFetchRequestGroup()
	all.Group = "g"
	f.Groups = append(f.Groups, all)
	fr = c.request(f).(*kmsg.OffsetFetchResponse)
	g0, g1, g2, g3 := fr.Groups[0], fr.Groups[1], fr.Groups[2], fr.Groups[3]
	if g0.ErrorCode != 0 || g0.Topics[0].TopicID != topicID || g0.Topics[0].Partitions[0].Offset != 100 || g0.Topics[0].Partitions[1].Offset != -1 {
		t.Fatalf("fetch g: %+v", g0)
	}
	if g1.ErrorCode != 0 || g1.Topics[0].Partitions[0].Offset != -1 {
		t.Fatalf("fetch of an unknown group: %+v", g1)
	}
	code(t, "fetch of a share group", g2.ErrorCode, kerr.GroupIDNotFound)
	if len(g3.Topics) != 1 || len(g3.Topics[0].Partitions) != 2 || g3.Topics[0].Partitions[1].Partition != 2 {
		t.Fatalf("fetch all: %+v", g3)
	}

	// offset-delete.
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g"
	ot := kmsg.NewOffsetDeleteRequestTopic()
	ot.Topic = "t"
	op := kmsg.NewOffsetDeleteRequestTopicPartition()
	op.Partition = 0
	ot.Partitions = append(ot.Partitions, op)
	od.Topics = append(od.Topics, ot)
	odr := c.request(od).(*kmsg.OffsetDeleteResponse)
	if odr.ErrorCode != 0 || odr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("offset delete: %+v", odr)
	}
	od.Group = "unknown"
	code(t, "offset delete of an unknown group", c.request(od).(*kmsg.OffsetDeleteResponse).ErrorCode, kerr.GroupIDNotFound)
	f = kmsg.NewPtrOffsetFetchRequest()
	f.SetVersion(8)
	f.Groups = append(f.Groups, all)
	if p := c.request(f).(*kmsg.OffsetFetchResponse).Groups[0].Topics[0].Partitions; len(p) != 1 || p[0].Partition != 2 {
		t.Fatalf("after offset delete: %+v", p)
	}
}
