package group

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func commitOne(group, member string, gen int32, topic string, partition int32, offset int64) CommitInput {
	return CommitInput{GroupID: group, MemberID: member, Generation: gen,
		Topics: []CommitTopic{{Topic: topic, Partitions: []CommitPartition{{Partition: partition, Offset: offset, LeaderEpoch: -1}}}}}
}

func (e *classicEnv) committed(group, topic string, partition int32) int64 {
	e.t.Helper()
	got, err := e.cg.Fetch(group, []OffsetPartitions{{Topic: topic, Partitions: []int32{partition}}})
	if err != nil {
		e.t.Fatalf("fetch: %v", err)
	}
	return got[0].Partitions[0].Offset
}

func TestClassicCommitChecks(t *testing.T) {
	e := newClassicEnv(t, nil)
	ids := e.stable("g", 2)
	// A group in CompletingRebalance.
	a := e.cg.Join(joinIn("c", ""))
	e.clock.Advance(3 * time.Second)
	cm := ready(t, a).MemberID
	inst := "i"
	tests := []struct {
		name string
		in   CommitInput
		want error
	}{
		{"member of the current generation", commitOne("g", ids[1], 1, "t", 0, 5), nil},
		{"unknown member", commitOne("g", "nobody", 1, "t", 0, 5), ErrUnknownMemberID},
		{"wrong generation", commitOne("g", ids[1], 2, "t", 0, 5), ErrIllegalGeneration},
		{"unknown instance", func() CommitInput { in := commitOne("g", ids[1], 1, "t", 0, 5); in.InstanceID = &inst; return in }(), ErrUnknownMemberID},
		{"CompletingRebalance", commitOne("c", cm, 1, "t", 0, 5), ErrRebalanceInProgress},
		{"simple commit to a group with members", commitOne("g", "", -1, "t", 0, 5), ErrUnknownMemberID},
		{"generation for a group that does not exist (v8-)", commitOne("nope", "m", 3, "t", 0, 5), ErrIllegalGeneration},
		{"generation for a group that does not exist (v9+)", func() CommitInput {
			in := commitOne("nope", "m", 3, "t", 0, 5)
			in.UnknownGroupIsNotFound = true
			return in
		}(), ErrGroupIDNotFound},
		{"empty group ID", commitOne("", "", -1, "t", 0, 5), ErrInvalidGroupID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs, err := e.cg.Commit(tt.in)
			if tt.want == nil {
				if err != nil || errs[0][0] != nil {
					t.Fatalf("commit: %v %v", err, errs)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
	if got := e.committed("g", "t", 0); got != 5 {
		t.Fatalf("committed %d, want 5", got)
	}
}

func TestClassicCommitSimple(t *testing.T) {
	e := newClassicEnv(t, nil)
	if errs, err := e.cg.Commit(commitOne("simple", "", -1, "t", 1, 42)); err != nil || errs[0][0] != nil {
		t.Fatalf("simple commit: %v %v", err, errs)
	}
	d := e.cg.Describe("simple")
	if d.Err != nil || d.State != ClassicEmpty || d.ProtocolType != "" {
		t.Fatalf("group made by a simple commit: %+v", d)
	}
	if got := e.committed("simple", "t", 1); got != 42 {
		t.Fatalf("committed %d", got)
	}
	// A group whose members left takes simple commits again.
	ids := e.stable("g", 1)
	e.cg.Leave("g", []ClassicLeavingMember{{MemberID: ids[0]}})
	if _, err := e.cg.Commit(commitOne("g", "", -1, "t", 0, 1)); err != nil {
		t.Fatalf("simple commit to an Empty group: %v", err)
	}
}

func TestClassicCommitStored(t *testing.T) {
	e := newClassicEnv(t, func(c *ClassicConfig) { c.OffsetMetadataMaxBytes = 8 })
	meta, long := "abc", strings.Repeat("x", 9)
	in := CommitInput{GroupID: "g", Generation: -1, Topics: []CommitTopic{
		{Topic: "t", Partitions: []CommitPartition{
			{Partition: 0, Offset: 10, LeaderEpoch: 4, Metadata: &meta},
			{Partition: 1, Offset: 11, LeaderEpoch: -1, Metadata: &long},
			{Partition: 3, Offset: 12},
			{Partition: 2, Offset: 13, LeaderEpoch: -1},
		}},
		{Topic: "missing", Partitions: []CommitPartition{{Partition: 0, Offset: 1}}},
	}}
	errs, err := e.cg.Commit(in)
	if err != nil || errs[0][0] != nil || !errors.Is(errs[0][1], ErrOffsetMetadataTooLarge) ||
		!errors.Is(errs[0][2], ErrUnknownTopicOrPartition) || errs[0][3] != nil || !errors.Is(errs[1][0], ErrUnknownTopicOrPartition) {
		t.Fatalf("commit: %v %v", errs, err)
	}
	got, err := e.cg.Fetch("g", []OffsetPartitions{{Topic: "t", Partitions: []int32{0, 1, 2}}, {Topic: "u", Partitions: []int32{0}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []FetchedOffset{{Partition: 0, Offset: 10, LeaderEpoch: 4, Metadata: "abc"}, {Partition: 1, Offset: -1, LeaderEpoch: -1}, {Partition: 2, Offset: 13, LeaderEpoch: -1}}
	for i, w := range want {
		if got[0].Partitions[i] != w {
			t.Fatalf("partition %d: %+v, want %+v", i, got[0].Partitions[i], w)
		}
	}
	if got[1].Partitions[0].Offset != -1 {
		t.Fatalf("uncommitted partition: %+v", got[1])
	}
	// Null topics: every committed partition, sorted.
	all, _ := e.cg.Fetch("g", nil)
	if len(all) != 1 || len(all[0].Partitions) != 2 || all[0].Partitions[1].Partition != 2 {
		t.Fatalf("fetch all: %+v", all)
	}
	// A group that does not exist has no commits.
	if none, err := e.cg.Fetch("nope", []OffsetPartitions{{Topic: "t", Partitions: []int32{0}}}); err != nil || none[0].Partitions[0].Offset != -1 {
		t.Fatalf("fetch of an unknown group: %+v %v", none, err)
	}
}

func TestClassicRetention(t *testing.T) {
	e := newClassicEnv(t, func(c *ClassicConfig) {
		c.OffsetsRetention = time.Hour
		c.RetentionCheckInterval = time.Minute
	})
	// A group that never had members: retention counts from the commit.
	e.cg.Commit(commitOne("simple", "", -1, "t", 0, 1))
	// A consumer group: retention counts from when it became Empty.
	ids := e.stable("g", 1)
	if _, err := e.cg.Commit(commitOne("g", ids[0], 1, "t", 0, 7)); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Hour) // members keep the offsets
	if err := e.cg.Heartbeat(ClassicHeartbeatInput{GroupID: "g", MemberID: ids[0], Generation: 1}); !errors.Is(err, ErrUnknownMemberID) {
		// The member expired long ago; that made the group Empty.
		t.Fatalf("heartbeat: %v", err)
	}
	if e.state("simple") != ClassicDead {
		t.Fatal("the simple group's offsets did not expire")
	}
	// g became Empty when its member's session ran out (10 s after the
	// sync), so its offsets expired an hour later and the group with them.
	if e.state("g") != ClassicDead {
		t.Fatalf("g: %s", e.state("g"))
	}

	// Leave, then check the boundary to the minute.
	ids = e.stable("h", 1)
	e.cg.Commit(commitOne("h", ids[0], 1, "t", 0, 9))
	e.cg.Leave("h", []ClassicLeavingMember{{MemberID: ids[0]}})
	e.clock.Advance(time.Hour - time.Minute)
	if got := e.committed("h", "t", 0); got != 9 {
		t.Fatalf("expired early: %d", got)
	}
	e.clock.Advance(time.Minute - time.Second)
	if got := e.committed("h", "t", 0); got != 9 {
		t.Fatalf("expired early: %d", got)
	}
	// The next check after the hour (checks run every minute) expires it.
	e.clock.Advance(time.Minute)
	if got := e.committed("h", "t", 0); got != -1 {
		t.Fatalf("not expired after the retention: %d", got)
	}
	if _, ok := e.reg.TypeOf("h"); ok {
		t.Fatal("removed group still registered")
	}
}

func TestClassicOffsetDelete(t *testing.T) {
	e := newClassicEnv(t, nil)
	ids := e.stable("g", 1) // subscribed to t
	e.cg.Commit(CommitInput{GroupID: "g", MemberID: ids[0], Generation: 1, Topics: []CommitTopic{
		{Topic: "t", Partitions: []CommitPartition{{Partition: 0, Offset: 1}}},
		{Topic: "u", Partitions: []CommitPartition{{Partition: 0, Offset: 2}}},
	}})
	errs, err := e.cg.DeleteOffsets("g", []OffsetPartitions{{Topic: "t", Partitions: []int32{0}}, {Topic: "u", Partitions: []int32{0, 5}}, {Topic: "x", Partitions: []int32{0}}})
	if err != nil || !errors.Is(errs[0][0], ErrGroupSubscribedToTopic) || errs[1][0] != nil ||
		!errors.Is(errs[1][1], ErrUnknownTopicOrPartition) || !errors.Is(errs[2][0], ErrUnknownTopicOrPartition) {
		t.Fatalf("delete: %v %v", errs, err)
	}
	if e.committed("g", "u", 0) != -1 || e.committed("g", "t", 0) != 1 {
		t.Fatal("wrong offsets deleted")
	}
	if _, err := e.cg.DeleteOffsets("nope", nil); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("unknown group: %v", err)
	}
	// Once Empty, every topic may go.
	e.cg.Leave("g", []ClassicLeavingMember{{MemberID: ids[0]}})
	if errs, _ := e.cg.DeleteOffsets("g", []OffsetPartitions{{Topic: "t", Partitions: []int32{0}}}); errs[0][0] != nil {
		t.Fatalf("delete from an Empty group: %v", errs)
	}
	// A group of another protocol type with members.
	in := joinIn("conn", "")
	in.ProtocolType = "connect"
	e.cg.Join(in)
	if _, err := e.cg.DeleteOffsets("conn", nil); !errors.Is(err, ErrNonEmptyGroup) {
		t.Fatalf("non-consumer group with members: %v", err)
	}
}
