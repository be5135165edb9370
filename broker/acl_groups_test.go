package broker_test

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupConsumeOne consumes the first record of topic in group as cn and
// returns its value or the first error the client reports.
func (ab *aclBroker) groupConsumeOne(t *testing.T, cn, topic, group string, opts ...kgo.Opt) (string, error) {
	t.Helper()
	opts = append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)
	cl := ab.client(t, cn, opts...)
	ctx := testCtx(t)
	rec, err := firstRecord(ctx, cl)
	if err != nil {
		// A refused client would keep rejoining in the background and,
		// once the test grants READ, take the partition from the next
		// one, which then waits for ever.
		cl.Close()
		return "", err
	}
	if err := cl.CommitRecords(ctx, rec); err != nil {
		return "", err
	}
	return string(rec.Value), nil
}

// Rules: api-authorization (groups: FindCoordinator, JoinGroup, SyncGroup,
// Heartbeat, OffsetCommit, OffsetFetch, ConsumerGroupHeartbeat,
// DescribeGroups, ListGroups).
func TestACLClassicAndConsumerGroups(t *testing.T) {
	ab := startACLBroker(t, nil)
	const topic = "events"
	ab.createTopic(t, topic)
	if err := ab.produceOne(t, "admin", topic); err != nil {
		t.Fatal(err)
	}
	ab.grant(t, kadm.NewACLs().Allow("User:CN=alice").AllowHosts().Topics(topic).Operations(kadm.OpRead))

	for _, tc := range []struct {
		name, group string
		opts        []kgo.Opt
	}{
		{"classic", "classic-g", nil},
		{"consumer (KIP-848)", "kip848-g", []kgo.Opt{kgo.ServerSideBalancer()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ab.groupConsumeOne(t, "alice", topic, tc.group, tc.opts...); !errors.Is(err, kerr.GroupAuthorizationFailed) {
				t.Fatalf("group consume without READ on the group: %v", err)
			}
			ab.grant(t, kadm.NewACLs().Allow("User:CN=alice").AllowHosts().Groups(tc.group).Operations(kadm.OpRead))
			if v, err := ab.groupConsumeOne(t, "alice", topic, tc.group, tc.opts...); err != nil || v != "v" {
				t.Fatalf("group consume with READ: %q %v", v, err)
			}
			adm := kadm.NewClient(ab.client(t, "alice"))
			offs, err := adm.FetchOffsets(testCtx(t), tc.group)
			if err != nil {
				t.Fatal(err)
			}
			if o, ok := offs.Lookup(topic, 0); !ok || o.At != 1 {
				t.Fatalf("committed offset %+v %v, want 1", o, ok)
			}
			if tc.opts == nil {
				return
			}
			// alice's member is still assigned the topic: carol, who may
			// describe the group but not the topic, is told
			// TOPIC_AUTHORIZATION_FAILED instead of the group.
			ab.grant(t, kadm.NewACLs().Allow("User:CN=carol").AllowHosts().Groups(tc.group).Operations(kadm.OpDescribe))
			cgd := kmsg.NewPtrConsumerGroupDescribeRequest()
			cgd.Groups = []string{tc.group}
			resp, err := cgd.RequestWith(testCtx(t), ab.client(t, "carol").Broker(0))
			if err != nil {
				t.Fatal(err)
			}
			if g := resp.Groups[0]; g.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(g.Members) != 0 {
				t.Fatalf("carol describing %s: %d with %d members", tc.group, g.ErrorCode, len(g.Members))
			}
		})
	}

	// ListGroups shows bob nothing; alice the groups she may describe
	// (READ implies DESCRIBE); the super user everything.
	list := func(cn string) []string {
		t.Helper()
		gs, err := kadm.NewClient(ab.client(t, cn)).ListGroups(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		return gs.Groups()
	}
	if got := list("bob"); len(got) != 0 {
		t.Fatalf("bob lists %v", got)
	}
	if got := list("alice"); len(got) != 2 {
		t.Fatalf("alice lists %v", got)
	}
	// kadm finds the coordinator first, which bob may not either.
	described, err := kadm.NewClient(ab.client(t, "bob")).DescribeGroups(testCtx(t), "classic-g")
	if err == nil {
		err = described["classic-g"].Err
	}
	if !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("bob describing classic-g: %v", err)
	}
	// OffsetCommit as bob, sent to the node itself (bob cannot find the
	// coordinator): GROUP_AUTHORIZATION_FAILED for every partition.
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "classic-g", -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = topic
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	cr, err := commit.RequestWith(testCtx(t), ab.client(t, "bob").Broker(0))
	if err != nil {
		t.Fatal(err)
	}
	if c := cr.Topics[0].Partitions[0].ErrorCode; c != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("bob committing: %d", c)
	}
	// OffsetFetch naming a topic alice may not describe: that topic's
	// partitions answer TOPIC_AUTHORIZATION_FAILED after the others.
	ab.createTopic(t, "hidden")
	ids, err := ab.admin(t).ListTopics(testCtx(t), topic, "hidden")
	if err != nil {
		t.Fatal(err)
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	og := kmsg.NewOffsetFetchRequestGroup()
	og.Group = "classic-g"
	for _, name := range []string{"hidden", topic} {
		ot := kmsg.NewOffsetFetchRequestGroupTopic()
		ot.Topic, ot.TopicID, ot.Partitions = name, ids[name].ID, []int32{0}
		og.Topics = append(og.Topics, ot)
	}
	of.Groups = append(of.Groups, og)
	fr, err := of.RequestWith(testCtx(t), ab.client(t, "alice").Broker(0))
	if err != nil {
		t.Fatal(err)
	}
	if g := fr.Groups[0]; g.ErrorCode != 0 || len(g.Topics) != 2 || g.Topics[0].Partitions[0].ErrorCode != 0 ||
		g.Topics[1].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code || g.Topics[1].TopicID != ids["hidden"].ID {
		t.Fatalf("OffsetFetch of events and hidden: %+v", g)
	}
	if got := denials(t, ab.b, "GROUP"); got == 0 {
		t.Fatal("no GROUP denial counted")
	}
}
