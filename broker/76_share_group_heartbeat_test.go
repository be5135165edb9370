package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/sharetest"
	"github.com/sharebroker/sharebroker/internal/testadmin"
	"github.com/sharebroker/sharebroker/locktimer"
)

type shareMember struct {
	id    string
	epoch int32
}

func heartbeat(t *testing.T, ctx context.Context, cl *kgo.Client, groupID string, m *shareMember, topics []string) *kmsg.ShareGroupHeartbeatResponse {
	t.Helper()
	return sharetest.Heartbeat(t, ctx, cl, groupID, m.id, &m.epoch, topics)
}

var (
	assignedCount      = testadmin.AssignedCount
	describeShareGroup = testadmin.DescribeShareGroup
)

func listShareGroups(t *testing.T, ctx context.Context, cl *kgo.Client, states, types []string) []string {
	t.Helper()
	req := kmsg.NewPtrListGroupsRequest()
	req.StatesFilter, req.TypesFilter = states, types
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("list groups: %v", err)
	}
	var ids []string
	for _, g := range resp.Groups {
		ids = append(ids, g.Group+"/"+g.GroupType+"/"+g.GroupState)
	}
	return ids
}

func deleteGroup(t *testing.T, ctx context.Context, cl *kgo.Client, groupID string) int16 {
	t.Helper()
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = []string{groupID}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Groups) != 1 {
		t.Fatalf("delete groups: %v", err)
	}
	return resp.Groups[0].ErrorCode
}

// The life of a share group as clients see it, on the manual clock:
// share-groups.md §4.3 (epochs, join, leave, timeout), §4.4 (pooled
// assignment), §4.5 (describe) and §5.4 (ListGroups, DeleteGroups).
func TestShareGroupMembershipLifecycle(t *testing.T) {
	clock := locktimer.NewManualClock(time.Unix(1_700_000_000, 0))
	_, addr := startBroker(t, broker.Config{Clock: clock})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Two one-partition topics, created by metadata.
	md := kmsg.NewPtrMetadataRequest()
	for _, name := range []string{"a", "b"} {
		tp := kmsg.NewMetadataRequestTopic()
		tp.Topic = kmsg.StringPtr(name)
		md.Topics = append(md.Topics, tp)
	}
	md.AllowAutoTopicCreation = true
	if _, err := md.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	const g = "sg"
	topics := []string{"a", "b"}
	m1 := &shareMember{id: "member-1"}
	m2 := &shareMember{id: "member-2"}

	resp := heartbeat(t, ctx, cl, g, m1, topics)
	if resp.ErrorCode != 0 || m1.epoch != 1 || assignedCount(resp) != 2 || resp.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("first join: code %d epoch %d assigned %d interval %d", resp.ErrorCode, m1.epoch, assignedCount(resp), resp.HeartbeatIntervalMillis)
	}
	if resp = heartbeat(t, ctx, cl, g, m2, topics); resp.ErrorCode != 0 || m2.epoch != 2 {
		t.Fatalf("second join: code %d epoch %d", resp.ErrorCode, m2.epoch)
	}
	// Subscriptions are homogeneous, so the two topics' partitions are
	// pooled: one each (kfake would give both members both).
	if n := assignedCount(resp); n != 1 {
		t.Fatalf("second member got %d partitions, want 1", n)
	}
	if resp = heartbeat(t, ctx, cl, g, m1, nil); m1.epoch != 2 || assignedCount(resp) != 1 {
		t.Fatalf("first member after the join: epoch %d, %d partitions", m1.epoch, assignedCount(resp))
	}

	d := describeShareGroup(t, ctx, cl, g)
	if d.ErrorCode != 0 || d.GroupState != "Stable" || d.Assignor != "simple" || len(d.Members) != 2 || d.GroupEpoch != 2 {
		t.Fatalf("describe: %+v", d)
	}
	if host := d.Members[0].ClientHost; host != "/127.0.0.1" {
		t.Fatalf("client host %q", host)
	}
	if got := listShareGroups(t, ctx, cl, nil, []string{"SHARE"}); len(got) != 1 || got[0] != "sg/share/Stable" {
		t.Fatalf("list by type: %v", got)
	}
	if got := listShareGroups(t, ctx, cl, []string{"empty"}, nil); len(got) != 0 {
		t.Fatalf("list by state Empty: %v", got)
	}
	if got := listShareGroups(t, ctx, cl, nil, []string{"consumer"}); len(got) != 0 {
		t.Fatalf("list by type consumer: %v", got)
	}
	if code := deleteGroup(t, ctx, cl, g); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with members: %d", code)
	}

	// Session timeout (45 s by default): member 1 heartbeats at 40 s and
	// survives, member 2 does not and is fenced exactly at 45 s.
	clock.Advance(40 * time.Second)
	heartbeat(t, ctx, cl, g, m1, nil)
	clock.Advance(5*time.Second - time.Millisecond)
	if n := len(describeShareGroup(t, ctx, cl, g).Members); n != 2 {
		t.Fatalf("%d members 1 ms before the timeout", n)
	}
	clock.Advance(time.Millisecond)
	if d = describeShareGroup(t, ctx, cl, g); len(d.Members) != 1 || d.Members[0].MemberID != m1.id {
		t.Fatalf("after member 2's timeout: %+v", d.Members)
	}
	if resp = heartbeat(t, ctx, cl, g, m2, nil); resp.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("fenced member heartbeats: code %d", resp.ErrorCode)
	}

	// A stale epoch is fenced; leaving empties the group; then it deletes.
	stale := &shareMember{id: m1.id, epoch: m1.epoch + 5}
	if resp = heartbeat(t, ctx, cl, g, stale, nil); resp.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("future epoch: code %d", resp.ErrorCode)
	}
	m1.epoch = -1
	if resp = heartbeat(t, ctx, cl, g, m1, nil); resp.ErrorCode != 0 || resp.MemberEpoch != -1 {
		t.Fatalf("leave: code %d epoch %d", resp.ErrorCode, resp.MemberEpoch)
	}
	if d = describeShareGroup(t, ctx, cl, g); d.GroupState != "Empty" {
		t.Fatalf("after leave: state %q", d.GroupState)
	}
	if code := deleteGroup(t, ctx, cl, g); code != 0 {
		t.Fatalf("delete empty group: %d", code)
	}
	if d = describeShareGroup(t, ctx, cl, g); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe after delete: code %d", d.ErrorCode)
	}
	if code := deleteGroup(t, ctx, cl, g); code != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete twice: %d", code)
	}
}

func TestShareGroupHeartbeatValidation(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cases := []struct {
		name   string
		member shareMember
		topics []string
		group  string
		want   *kerr.Error
	}{
		{"empty member id", shareMember{id: ""}, []string{"t"}, "g", kerr.InvalidRequest},
		{"member id over 36 characters", shareMember{id: "0123456789012345678901234567890123456"}, []string{"t"}, "g", kerr.InvalidRequest},
		{"join without topics", shareMember{id: "m"}, nil, "g", kerr.InvalidRequest},
		{"epoch below -1", shareMember{id: "m", epoch: -2}, nil, "g", kerr.InvalidRequest},
		{"unknown group with an epoch", shareMember{id: "m", epoch: 3}, nil, "nope", kerr.GroupIDNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.member
			resp := heartbeat(t, ctx, cl, tc.group, &m, tc.topics)
			if resp.ErrorCode != tc.want.Code {
				t.Fatalf("code %d, want %s", resp.ErrorCode, tc.want.Message)
			}
			if resp.ErrorMessage == nil || *resp.ErrorMessage == "" {
				t.Fatal("no error message")
			}
		})
	}
}
