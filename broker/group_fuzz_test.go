package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupFuzzKeys are the consumer-group APIs FuzzGroupRequests sends:
// classic JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
// OffsetFetch, DescribeGroups, DeleteGroups, OffsetDelete, and KIP-848
// ConsumerGroupHeartbeat and ConsumerGroupDescribe.
var groupFuzzKeys = []int16{11, 14, 12, 13, 8, 9, 15, 42, 47, 68, 69}

// Seed builders. Classic member IDs are fuzzClientID + "-<n>" (fuzzBroker's
// counter); group "cg" is classic, "kg" KIP-848.

func seedJoin(v int16, group, member string, instance *string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version, r.Group, r.MemberID, r.InstanceID = v, group, member, instance
	r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 10_000, 20_000
	r.ProtocolType = "consumer"
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{"t"}
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", meta.AppendTo(nil)
	r.Protocols = append(r.Protocols, p)
	return r
}

func seedSync(v int16, group, member string, gen int32, assignTo ...string) *kmsg.SyncGroupRequest {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version, r.Group, r.MemberID, r.Generation = v, group, member, gen
	if v >= 5 {
		r.ProtocolType, r.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	}
	for i, m := range assignTo {
		a := kmsg.NewConsumerMemberAssignment()
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = "t", []int32{int32(i % 2)}
		a.Topics = append(a.Topics, at)
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = m, a.AppendTo(nil)
		r.GroupAssignment = append(r.GroupAssignment, ga)
	}
	return r
}

func seedHeartbeat(v int16, group, member string, gen int32) *kmsg.HeartbeatRequest {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version, r.Group, r.MemberID, r.Generation = v, group, member, gen
	return r
}

func seedLeave(v int16, group, member string, instance *string) *kmsg.LeaveGroupRequest {
	r := kmsg.NewPtrLeaveGroupRequest()
	r.Version, r.Group = v, group
	if v < 3 {
		r.MemberID = member
		return r
	}
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID, m.InstanceID = member, instance
	r.Members = append(r.Members, m)
	return r
}

func seedCommit(v int16, group, member string, gen int32) *kmsg.OffsetCommitRequest {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version, r.Group, r.MemberID, r.Generation = v, group, member, gen
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic, t.TopicID = "t", fuzzTopicID
	for p := range int32(2) {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.Metadata = p, 3+int64(p), kmsg.StringPtr("m")
		t.Partitions = append(t.Partitions, rp)
	}
	r.Topics = append(r.Topics, t)
	return r
}

func seedFetch(v int16, group string, requireStable bool) *kmsg.OffsetFetchRequest {
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version, r.RequireStable = v, requireStable
	if v < 8 {
		r.Group = group
		t := kmsg.NewOffsetFetchRequestTopic()
		t.Topic, t.Partitions = "t", []int32{0, 1}
		r.Topics = append(r.Topics, t)
		return r
	}
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = group
	t := kmsg.NewOffsetFetchRequestGroupTopic()
	t.Topic, t.TopicID, t.Partitions = "t", fuzzTopicID, []int32{0, 1}
	g.Topics = append(g.Topics, t)
	r.Groups = append(r.Groups, g)
	return r
}

func seedDescribe(v int16, groups ...string) *kmsg.DescribeGroupsRequest {
	r := kmsg.NewPtrDescribeGroupsRequest()
	r.Version, r.Groups = v, groups
	return r
}

func seedDeleteGroups(v int16, groups ...string) *kmsg.DeleteGroupsRequest {
	r := kmsg.NewPtrDeleteGroupsRequest()
	r.Version, r.Groups = v, groups
	return r
}

func seedOffsetDelete(group string) *kmsg.OffsetDeleteRequest {
	r := kmsg.NewPtrOffsetDeleteRequest()
	r.Group = group
	t := kmsg.NewOffsetDeleteRequestTopic()
	t.Topic = "t"
	for p := range int32(2) {
		rp := kmsg.NewOffsetDeleteRequestTopicPartition()
		rp.Partition = p
		t.Partitions = append(t.Partitions, rp)
	}
	r.Topics = append(r.Topics, t)
	return r
}

// seedCGHeartbeat is a ConsumerGroupHeartbeat; a join (epoch 0) subscribes
// to "t", and owned lists the partitions of "t" the member says it owns.
func seedCGHeartbeat(v int16, group, member string, epoch int32, owned ...int32) *kmsg.ConsumerGroupHeartbeatRequest {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version, r.Group, r.MemberID, r.MemberEpoch = v, group, member, epoch
	if epoch == 0 {
		r.RebalanceTimeoutMillis = 20_000
		r.SubscribedTopicNames = []string{"t"}
		r.ServerAssignor = kmsg.StringPtr("uniform")
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{} // a join owns nothing
	}
	if epoch > 0 {
		t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
		t.TopicID, t.Partitions = fuzzTopicID, owned
		r.Topics = append(r.Topics, t)
	}
	return r
}

func seedCGDescribe(groups ...string) *kmsg.ConsumerGroupDescribeRequest {
	r := kmsg.NewPtrConsumerGroupDescribeRequest()
	r.Version, r.Groups = 1, groups
	return r
}

// stepOf, clockStep and stepsOf build seed steps: one request, a clock
// advance, and a run of requests.
func stepOf(r kmsg.Request) fuzzStep     { return fuzzStep{req: r} }
func clockStep(d time.Duration) fuzzStep { return fuzzStep{advance: d} }
func stepsOf(rs ...kmsg.Request) []fuzzStep {
	out := make([]fuzzStep, len(rs))
	for i, r := range rs {
		out[i] = stepOf(r)
	}
	return out
}

// groupSeeds are conversations a client would have, so the fuzzer starts
// from groups in every state.
func groupSeeds() [][]fuzzStep {
	inst := kmsg.StringPtr("i1")
	return [][]fuzzStep{
		// v0: join makes member c-1 at once; a whole life.
		stepsOf(seedJoin(0, "cg", "", nil), seedSync(0, "cg", "c-1", 1, "c-1"), seedCommit(2, "cg", "c-1", 1),
			seedHeartbeat(0, "cg", "c-1", 1), seedFetch(1, "cg", false), seedDescribe(0, "cg"), seedLeave(0, "cg", "c-1", nil),
			seedOffsetDelete("cg"), seedDeleteGroups(0, "cg")),
		// v9: MEMBER_ID_REQUIRED, then the join with c-1.
		stepsOf(seedJoin(9, "cg", "", nil), seedJoin(9, "cg", "c-1", nil), seedSync(5, "cg", "c-1", 1, "c-1"),
			seedHeartbeat(4, "cg", "c-1", 1), seedCommit(9, "cg", "c-1", 1), seedFetch(9, "cg", true),
			seedDescribe(5, "cg"), seedLeave(5, "cg", "c-1", nil), seedDeleteGroups(2, "cg")),
		// Two members: c-2's join parks until the leader c-1 rejoins, and
		// c-2's sync parks until the leader's.
		stepsOf(seedJoin(4, "cg", "", nil), seedJoin(4, "cg", "c-1", nil), seedSync(3, "cg", "c-1", 1, "c-1"),
			seedJoin(4, "cg", "", nil), seedJoin(4, "cg", "c-2", nil), seedJoin(4, "cg", "c-1", nil),
			seedSync(3, "cg", "c-2", 2), seedSync(3, "cg", "c-1", 2, "c-1", "c-2"),
			seedHeartbeat(3, "cg", "c-2", 2), seedCommit(7, "cg", "c-2", 2), seedLeave(3, "cg", "c-1", nil), seedDescribe(4, "cg")),
		// A static member replaced by a new join of its instance, then
		// removed by instance ID.
		stepsOf(seedJoin(5, "cg", "", inst), seedSync(5, "cg", "i1-1", 1, "i1-1"), seedJoin(5, "cg", "", inst),
			seedSync(5, "cg", "i1-2", 1), seedHeartbeat(3, "cg", "i1-1", 1), seedLeave(4, "cg", "", inst), seedDescribe(5, "cg")),
		// A member that stops heartbeating times out; the round ends.
		append(stepsOf(seedJoin(1, "cg", "", nil), seedSync(1, "cg", "c-1", 1, "c-1")),
			clockStep(15*time.Second), stepOf(seedHeartbeat(1, "cg", "c-1", 1)), stepOf(seedDescribe(1, "cg"))),
		// KIP-848 v0: the broker makes member ID "1"; it takes and
		// reports its partitions, commits, and leaves.
		stepsOf(seedCGHeartbeat(0, "kg", "", 0), seedCGHeartbeat(0, "kg", "1", 1, 0, 1), seedCommit(9, "kg", "1", 1),
			seedFetch(9, "kg", true), seedCGDescribe("kg"), seedCGHeartbeat(0, "kg", "1", -1), seedCGDescribe("kg")),
		// KIP-848 v1: client-made member IDs; two members share "t".
		append(stepsOf(seedCGHeartbeat(1, "kg", "m1", 0), seedCGHeartbeat(1, "kg", "m1", 1, 0, 1), seedCGHeartbeat(1, "kg", "m2", 0),
			seedCGHeartbeat(1, "kg", "m1", 1, 0), seedCGHeartbeat(1, "kg", "m2", 2, 1), seedCGDescribe("kg")),
			clockStep(50*time.Second), stepOf(seedCGDescribe("kg")), stepOf(seedDeleteGroups(2, "kg"))),
		// A classic group emptied, taken over by a KIP-848 member, and
		// back once it leaves (empty-upgrade, empty-downgrade).
		stepsOf(seedJoin(0, "cg", "", nil), seedSync(0, "cg", "c-1", 1, "c-1"), seedCommit(2, "cg", "c-1", 1), seedLeave(0, "cg", "c-1", nil),
			seedCGHeartbeat(1, "cg", "m1", 0), seedCGHeartbeat(1, "cg", "m1", -1), seedJoin(0, "cg", "", nil), seedDescribe(5, "cg")),
	}
}

// FuzzGroupRequests runs sequences of consumer-group requests (classic and
// KIP-848, any version the broker serves, arbitrary bodies) against one
// broker per input: no handler may panic, hang, return an error or an
// answer that does not encode; after every step the classic and consumer
// group invariants hold (group.ClassicGroups.CheckInvariants,
// ConsumerGroups.CheckInvariants); after the last, every parked JoinGroup
// and SyncGroup returns once the clock passes its timeouts, the groups
// still describe, and the broker closes. The input's first byte picks the
// initial rebalance delay, a small group size, or closing with calls
// parked (fuzzConfig).
func FuzzGroupRequests(f *testing.F) {
	for _, s := range groupSeeds() {
		f.Add(encodeSteps(f, groupFuzzKeys, 0, s...))
	}
	// With the initial delay both joins park until the clock passes it,
	// twice: the second join extends it.
	f.Add(encodeSteps(f, groupFuzzKeys, fuzzInitialDelay, append(stepsOf(seedJoin(4, "cg", "", nil), seedJoin(4, "cg", "c-1", nil),
		seedJoin(4, "cg", "", nil), seedJoin(4, "cg", "c-2", nil)), clockStep(6*time.Second),
		stepOf(seedSync(3, "cg", "c-2", 1)), stepOf(seedSync(3, "cg", "c-1", 1, "c-1", "c-2")))...))
	// Close answers a join parked in its round.
	f.Add(encodeSteps(f, groupFuzzKeys, fuzzCloseParked, stepsOf(seedJoin(0, "cg", "", nil), seedJoin(0, "cg", "", nil))...))
	// Regression (max-size in a round): two members await the round, so
	// the first member's late rejoin is turned away; it used to be let
	// in, and the round ended with three members of two allowed.
	f.Add(encodeSteps(f, groupFuzzKeys, fuzzSmallGroups, stepsOf(seedJoin(0, "cg", "", nil), seedSync(0, "cg", "c-1", 1, "c-1"),
		seedJoin(0, "cg", "", nil), seedJoin(0, "cg", "", nil), seedJoin(0, "cg", "c-1", nil))...))
	// A third member is one too many.
	f.Add(encodeSteps(f, groupFuzzKeys, fuzzSmallGroups, stepsOf(seedJoin(0, "cg", "", nil), seedJoin(0, "cg", "", nil),
		seedJoin(0, "cg", "", nil), seedCGHeartbeat(1, "kg", "m1", 0), seedCGHeartbeat(1, "kg", "m2", 0), seedCGHeartbeat(1, "kg", "m3", 0))...))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzSequence(t, groupFuzzKeys, data, nil)
	})
}
