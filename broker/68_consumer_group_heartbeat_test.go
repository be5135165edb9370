package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/locktimer"
)

// cgMember is a KIP-848 member driven by raw ConsumerGroupHeartbeats.
type cgMember struct {
	id    string
	epoch int32
	owned []kmsg.ConsumerGroupHeartbeatRequestTopic
}

// cgBeat heartbeats m: a join (epoch 0) or a full request, reporting what
// m owns, and adopts the answer's assignment as what m owns. The version
// is cl's highest (see pinnedClient).
func cgBeat(t *testing.T, ctx context.Context, cl *kgo.Client, groupID string, m *cgMember) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = groupID, m.id, m.epoch
	req.RebalanceTimeoutMillis = 30000
	req.SubscribedTopicNames = []string{"t"}
	req.Topics = m.owned
	if req.Topics == nil {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("consumer group heartbeat: %v", err)
	}
	if resp.ErrorCode == 0 {
		m.epoch = resp.MemberEpoch
		if resp.MemberID != nil {
			m.id = *resp.MemberID
		}
		if resp.Assignment != nil {
			m.owned = nil
			for _, at := range resp.Assignment.Topics {
				m.owned = append(m.owned, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: at.TopicID, Partitions: at.Partitions})
			}
		}
	}
	return resp
}

func ownedCount(m *cgMember) int {
	n := 0
	for _, t := range m.owned {
		n += len(t.Partitions)
	}
	return n
}

// The wire side of groups.md 848-epochs, 848-revoke-first, 848-fencing,
// 848-timeouts and the consumer-group parts of commit-checks, list,
// describe and delete, on the manual clock.
func TestConsumerGroupHeartbeat848Rules(t *testing.T) {
	clock := locktimer.NewManualClock(time.Unix(1_700_000_000, 0))
	_, addr := startBroker(t, broker.Config{Clock: clock})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	mustCreate(t, ctx, kadm.NewClient(cl), "t", 6, nil)
	const g = "cg"

	// v0: the broker makes the member ID.
	a := &cgMember{}
	if resp := cgBeat(t, ctx, pinnedClient(t, addr, 68, 0), g, a); resp.ErrorCode != 0 || a.id == "" || a.epoch != 1 || ownedCount(a) != 6 || resp.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("v0 join: %+v", resp)
	}
	// v1: the client makes it; an empty one is refused.
	if resp := cgBeat(t, ctx, cl, g, &cgMember{}); resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("v1 join without member ID: code %d", resp.ErrorCode)
	}
	b := &cgMember{id: "member-b"}
	if resp := cgBeat(t, ctx, cl, g, b); resp.ErrorCode != 0 || b.epoch != 2 || ownedCount(b) != 0 {
		t.Fatalf("b joins while a owns everything: %+v", resp)
	}
	// 848-revoke-first: a is told to give up three partitions at its epoch.
	if resp := cgBeat(t, ctx, cl, g, &cgMember{id: a.id, epoch: a.epoch, owned: a.owned}); resp.ErrorCode != 0 || resp.MemberEpoch != 1 || resp.Assignment == nil {
		t.Fatalf("a revoking: %+v", resp)
	} else {
		a.owned = nil
		for _, at := range resp.Assignment.Topics {
			a.owned = append(a.owned, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: at.TopicID, Partitions: at.Partitions})
		}
	}
	if cgBeat(t, ctx, cl, g, b); ownedCount(b) != 0 {
		t.Fatal("b received partitions a has not released")
	}
	if cgBeat(t, ctx, cl, g, a); a.epoch != 2 || ownedCount(a) != 3 {
		t.Fatalf("a after revoking: epoch %d, %d partitions", a.epoch, ownedCount(a))
	}
	if cgBeat(t, ctx, cl, g, b); ownedCount(b) != 3 {
		t.Fatalf("b after a released: %d partitions", ownedCount(b))
	}

	// 848-fencing.
	if resp := cgBeat(t, ctx, cl, g, &cgMember{id: b.id, epoch: 9, owned: b.owned}); resp.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("future epoch: code %d", resp.ErrorCode)
	}
	if resp := cgBeat(t, ctx, cl, g, &cgMember{id: "nobody", epoch: 2}); resp.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member: code %d", resp.ErrorCode)
	}

	// Describe and list.
	dreq := kmsg.NewPtrConsumerGroupDescribeRequest()
	dreq.Groups = []string{g, "missing"}
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil || len(dresp.Groups) != 2 {
		t.Fatalf("describe: %v", err)
	}
	if d := dresp.Groups[0]; d.ErrorCode != 0 || d.State != "Stable" || d.Epoch != 2 || d.AssignorName != "uniform" || len(d.Members) != 2 {
		t.Fatalf("describe: %+v", d)
	}
	if d := dresp.Groups[1]; d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe missing: code %d", d.ErrorCode)
	}
	if got := listShareGroups(t, ctx, cl, nil, []string{"Consumer"}); len(got) != 1 || got[0] != "cg/consumer/Stable" {
		t.Fatalf("list: %v", got)
	}

	// commit-checks with member epochs.
	// Pinned clients: v10 names topics by ID, and v8 is refused to members.
	committers := map[int16]*kgo.Client{8: pinnedClient(t, addr, 8, 8), 9: pinnedClient(t, addr, 8, 9)}
	commit := func(member string, epoch int32, version int16) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		via := committers[version]
		req.Group, req.MemberID, req.Generation = g, member, epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 5
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, via)
		if err != nil {
			t.Fatalf("commit: %v", err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := commit(a.id, 1, 9); code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("stale commit: code %d", code)
	}
	if code := commit(a.id, 2, 8); code != kerr.UnsupportedVersion.Code {
		t.Fatalf("commit v8 from a consumer-protocol member: code %d", code)
	}
	if code := commit(a.id, 2, 9); code != 0 {
		t.Fatalf("commit: code %d", code)
	}
	freq := kmsg.NewPtrOffsetFetchRequest()
	fg := kmsg.NewOffsetFetchRequestGroup()
	fg.Group, fg.MemberID, fg.MemberEpoch = g, kmsg.StringPtr(b.id), 1
	freq.Groups = append(freq.Groups, fg)
	if fresp, err := freq.RequestWith(ctx, cl); err != nil || fresp.Groups[0].ErrorCode != kerr.StaleMemberEpoch.Code {
		t.Fatalf("offset fetch with stale epoch: %v %+v", err, fresp)
	}
	freq.Groups[0].MemberEpoch = b.epoch
	if fresp, err := freq.RequestWith(ctx, cl); err != nil || fresp.Groups[0].ErrorCode != 0 || fresp.Groups[0].Topics[0].Partitions[0].Offset != 5 {
		t.Fatalf("offset fetch: %v %+v", err, fresp)
	}

	// 848-timeouts: b keeps heartbeating, a goes silent and is removed
	// after the session timeout; b then takes every partition.
	clock.Advance(40 * time.Second)
	cgBeat(t, ctx, cl, g, b)
	clock.Advance(5 * time.Second)
	if cgBeat(t, ctx, cl, g, b); b.epoch != 3 || ownedCount(b) != 6 {
		t.Fatalf("b after a timed out: epoch %d, %d partitions", b.epoch, ownedCount(b))
	}
	if code := deleteGroup(t, ctx, cl, g); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with members: code %d", code)
	}
	if resp := cgBeat(t, ctx, cl, g, &cgMember{id: b.id, epoch: -1}); resp.ErrorCode != 0 || resp.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", resp)
	}
	if code := deleteGroup(t, ctx, cl, g); code != 0 {
		t.Fatalf("delete: code %d", code)
	}
	if code := deleteGroup(t, ctx, cl, g); code != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete again: code %d", code)
	}
}
