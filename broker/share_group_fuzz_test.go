package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareGroupFuzzKeys are the share-group membership and administration APIs
// FuzzShareGroupRequests sends: ShareGroupHeartbeat, ShareGroupDescribe,
// DeleteGroups, Describe-, Alter- and DeleteShareGroupOffsets, and
// CreatePartitions (partitions added to a subscribed topic bump the group
// epoch). ShareFetch and ShareAcknowledge are FuzzShareFetch's and
// FuzzShareAcknowledge's: their long polls wait on the clock.
var shareGroupFuzzKeys = []int16{76, 77, 42, 90, 91, 92, 37}

// seedSGHeartbeat is a ShareGroupHeartbeat; topics, if any, are the
// subscription (required on a join, epoch 0).
func seedSGHeartbeat(group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatRequest {
	r := kmsg.NewPtrShareGroupHeartbeatRequest()
	r.Version, r.GroupID, r.MemberID, r.MemberEpoch = 1, group, member, epoch
	if len(topics) > 0 {
		r.SubscribedTopicNames = topics
	}
	return r
}

func seedSGDescribe(groups ...string) *kmsg.ShareGroupDescribeRequest {
	r := kmsg.NewPtrShareGroupDescribeRequest()
	r.Version, r.GroupIDs = 1, groups
	return r
}

func seedAlterShareOffsets(group string, offset int64) *kmsg.AlterShareGroupOffsetsRequest {
	r := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	r.GroupID = group
	r.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: "t", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{
		{Partition: 0, StartOffset: offset}, {Partition: 1, StartOffset: offset},
	}}}
	return r
}

func seedDeleteShareOffsets(group string) *kmsg.DeleteShareGroupOffsetsRequest {
	r := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	r.GroupID, r.Topics = group, []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "t"}}
	return r
}

func seedCreatePartitions(count int32) *kmsg.CreatePartitionsRequest {
	r := kmsg.NewPtrCreatePartitionsRequest()
	r.Version = 3
	t := kmsg.NewCreatePartitionsRequestTopic()
	t.Topic, t.Count = "t", count
	r.Topics = append(r.Topics, t)
	return r
}

// FuzzShareGroupRequests runs sequences of share-group requests (arbitrary
// bodies at any version the broker serves, and clock steps) against one
// broker per input: no handler may panic, hang, return an error or an
// answer that does not encode, and after every step the share groups'
// invariants hold (group.ShareGroups.CheckInvariants, with the other
// coordinators' and the share partitions'). The first byte configures the
// broker as for FuzzGroupRequests (fuzzConfig).
func FuzzShareGroupRequests(f *testing.F) {
	seeds := [][]fuzzStep{
		// Two members share "t", the first heartbeats to the new epoch,
		// partitions are added, and a session times out.
		append(stepsOf(seedSGHeartbeat("sg", "m1", 0, "t"), seedSGHeartbeat("sg", "m2", 0, "t"), seedSGHeartbeat("sg", "m1", 1),
			seedSGDescribe("sg"), seedCreatePartitions(3), seedSGHeartbeat("sg", "m2", 2), seedSGHeartbeat("sg", "m1", 2)),
			clockStep(30*time.Second), stepOf(seedSGHeartbeat("sg", "m1", 3)), clockStep(20*time.Second), stepOf(seedSGDescribe("sg"))),
		// Leave, then administer the empty group, and delete it.
		stepsOf(seedSGHeartbeat("sg", "m1", 0, "t"), seedSGHeartbeat("sg", "m1", 1, "t", "t"), seedAlterShareOffsets("sg", 0),
			seedSGHeartbeat("sg", "m1", -1), seedAlterShareOffsets("sg", 1), seedDeleteShareOffsets("sg"), seedDeleteGroups(2, "sg"),
			seedSGHeartbeat("sg", "m1", 0, "t")),
		// A third member is one too many (fuzzSmallGroups), and a stale
		// epoch is fenced.
		stepsOf(seedSGHeartbeat("sg", "m1", 0, "t"), seedSGHeartbeat("sg", "m2", 0, "t"), seedSGHeartbeat("sg", "m3", 0, "t"),
			seedSGHeartbeat("sg", "m1", 7), seedSGHeartbeat("sg", "m2", 2, "u")),
	}
	for i, s := range seeds {
		flags := byte(0)
		if i == 2 {
			flags = fuzzSmallGroups
		}
		f.Add(encodeSteps(f, shareGroupFuzzKeys, flags, s...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzSequence(t, shareGroupFuzzKeys, data, nil)
	})
}
