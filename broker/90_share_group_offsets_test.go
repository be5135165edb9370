package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *rawShare) describeOffsets(groupID string, topics map[string][]int32) kmsg.DescribeShareGroupOffsetsResponseGroup {
	s.t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.Version = 1
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = groupID
	if topics != nil {
		g.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{}
	}
	for name, parts := range topics {
		rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		rt.Topic, rt.Partitions = name, parts
		g.Topics = append(g.Topics, rt)
	}
	req.Groups = append(req.Groups, g)
	return s.c.request(req).(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0]
}

// offsetOf returns StartOffset and Lag of partition 0 of "t".
func (s *rawShare) offsetOf(groupID string) (int64, int64) {
	s.t.Helper()
	g := s.describeOffsets(groupID, map[string][]int32{"t": {0}})
	p := g.Topics[0].Partitions[0]
	return p.StartOffset, p.Lag
}

func (s *rawShare) alterOffsets(groupID, topic string, partition int32, start int64) *kmsg.AlterShareGroupOffsetsResponse {
	s.t.Helper()
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = groupID
	rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
	rp.Partition, rp.StartOffset = partition, start
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return s.c.request(req).(*kmsg.AlterShareGroupOffsetsResponse)
}

func (s *rawShare) deleteOffsets(groupID, topic string) *kmsg.DeleteShareGroupOffsetsResponse {
	s.t.Helper()
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID = groupID
	rt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
	rt.Topic = topic
	req.Topics = append(req.Topics, rt)
	return s.c.request(req).(*kmsg.DeleteShareGroupOffsetsResponse)
}

// share-groups.md §5.1-5.3 on one partition of five records.
func TestShareGroupOffsets(t *testing.T) {
	s := newRawShare(t, 5)
	if start, lag := s.offsetOf("g"); start != -1 || lag != -1 {
		t.Fatalf("before any read: start %d lag %d, want -1 -1", start, lag)
	}
	partitionOf(t, s.fetch(2, "m1", 0, nil, nil)) // acquires 0-4
	if start, lag := s.offsetOf("g"); start != 0 || lag != 5 {
		t.Fatalf("after acquiring: start %d lag %d, want 0 5", start, lag)
	}
	s.ack(2, "m1", 1, false, []ackSpec{{0, 1, []int8{1}}, {3, 3, []int8{1}}})
	// SPSO moves past 0-1; 3 is finished inside the window.
	if start, lag := s.offsetOf("g"); start != 2 || lag != 2 {
		t.Fatalf("after accepting 0, 1 and 3: start %d lag %d, want 2 2", start, lag)
	}
	all := s.describeOffsets("g", nil)
	if len(all.Topics) != 1 || all.Topics[0].Topic != "t" || all.Topics[0].TopicID != s.topicID {
		t.Fatalf("describe-all: %+v", all.Topics)
	}
	unknown := s.describeOffsets("g", map[string][]int32{"nope": {0}})
	if p := unknown.Topics[0].Partitions[0]; p.StartOffset != -1 || p.ErrorCode != 0 || unknown.Topics[0].TopicID != ([16]byte{}) {
		t.Fatalf("unknown topic: %+v", unknown.Topics[0])
	}
	if g := s.describeOffsets("no-such-group", map[string][]int32{"t": {0}}); g.ErrorCode != 0 || g.Topics[0].Partitions[0].StartOffset != -1 {
		t.Fatalf("a group that does not exist: %+v", g)
	}

	// Alter: the state is replaced; m1's records are forgotten with it.
	if r := s.alterOffsets("g", "t", 0, 4); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter: %+v", r)
	}
	if start, lag := s.offsetOf("g"); start != 4 || lag != 1 {
		t.Fatalf("after alter to 4: start %d lag %d, want 4 1", start, lag)
	}
	// A late accept of a forgotten record lies below the new SPSO: skipped
	// without error, and the window is unchanged (ack-below-spso).
	late := s.ack(2, "m1", 2, false, []ackSpec{{2, 2, []int8{1}}})
	wantCode(t, "accept of a record forgotten by alter", late.Topics[0].Partitions[0].ErrorCode, nil)
	if start, lag := s.offsetOf("g"); start != 4 || lag != 1 {
		t.Fatalf("after the late accept: start %d lag %d, want 4 1", start, lag)
	}
	for name, tc := range map[string]struct {
		group, topic string
		partition    int32
		start        int64
		top, part    *kerr.Error
	}{
		"unknown topic":      {"g", "nope", 0, 0, nil, kerr.UnknownTopicOrPartition},
		"unknown partition":  {"g", "t", 5, 0, nil, kerr.UnknownTopicOrPartition},
		"negative offset":    {"g", "t", 0, -3, nil, kerr.InvalidRequest},
		"empty group id":     {"", "t", 0, 0, kerr.InvalidGroupID, nil},
		"new group, created": {"fresh", "t", 0, 1, nil, nil},
	} {
		r := s.alterOffsets(tc.group, tc.topic, tc.partition, tc.start)
		wantCode(t, name+" (top level)", r.ErrorCode, tc.top)
		if tc.top == nil {
			wantCode(t, name, r.Topics[0].Partitions[0].ErrorCode, tc.part)
		}
	}
	if start, _ := s.offsetOf("fresh"); start != 1 {
		t.Fatalf("altered new group starts at %d, want 1", start)
	}

	// Delete: the state goes; deleting again finds nothing.
	if r := s.deleteOffsets("g", "t"); r.ErrorCode != 0 || r.Topics[0].ErrorCode != 0 || r.Topics[0].TopicID != s.topicID {
		t.Fatalf("delete: %+v", r)
	}
	if start, _ := s.offsetOf("g"); start != -1 {
		t.Fatalf("after delete: start %d, want -1", start)
	}
	wantCode(t, "delete twice", s.deleteOffsets("g", "t").Topics[0].ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "delete unknown topic", s.deleteOffsets("g", "nope").Topics[0].ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "delete for a missing group", s.deleteOffsets("no-such-group", "t").ErrorCode, kerr.GroupIDNotFound)

	// A group with members refuses both.
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.Version = 1
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "busy", "member-1", []string{"t"}
	if r := s.c.request(hb).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode != 0 {
		t.Fatalf("join: %d", r.ErrorCode)
	}
	wantCode(t, "alter with members", s.alterOffsets("busy", "t", 0, 0).ErrorCode, kerr.NonEmptyGroup)
	wantCode(t, "delete with members", s.deleteOffsets("busy", "t").ErrorCode, kerr.NonEmptyGroup)
	// Describe-all lists the partitions a member subscribes to, unread.
	if g := s.describeOffsets("busy", nil); len(g.Topics) != 1 || g.Topics[0].Partitions[0].StartOffset != -1 {
		t.Fatalf("describe-all of a subscribed, unread topic: %+v", g.Topics)
	}
}
