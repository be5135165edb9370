package broker_test

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareConsumeOne takes the first record of topic through share group
// group as cn, accepting it, and returns its value or the first error
// the client reports. The client is closed before it returns: kgo keeps
// heartbeating after a refusal, so a refused client left open joins as
// soon as the ACL is granted and may acquire the record the next
// client is waiting for (TestACLShareGroup timed out that way once).
func (ab *aclBroker) shareConsumeOne(t *testing.T, cn, topic, group string) (string, error) {
	t.Helper()
	cl := ab.client(t, cn, kgo.ConsumeTopics(topic), kgo.ShareGroup(group))
	defer cl.Close()
	ctx := testCtx(t)
	rec, err := firstRecord(ctx, cl)
	if err != nil {
		return "", err
	}
	rec.Ack(kgo.AckAccept)
	if err := cl.FlushAcks(ctx); err != nil {
		return "", err
	}
	return string(rec.Value), nil
}

// Rules: api-authorization (ShareGroupHeartbeat, ShareFetch,
// ShareAcknowledge).
func TestACLShareGroup(t *testing.T) {
	ab := startACLBroker(t, nil)
	const topic, group = "jobs", "workers"
	ab.createTopic(t, topic)
	admin := ab.client(t, "admin")
	setGroupConfig(t, testCtx(t), admin, group, "share.auto.offset.reset", "earliest")
	if err := ab.produceOne(t, "admin", topic); err != nil {
		t.Fatal(err)
	}

	// The topic but not the group: the heartbeat is refused for the group.
	ab.grant(t, kadm.NewACLs().Allow("User:CN=alice").AllowHosts().Topics(topic).Operations(kadm.OpRead))
	if _, err := ab.shareConsumeOne(t, "alice", topic, group); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("share consume without READ on the group: %v", err)
	}
	ab.grant(t, kadm.NewACLs().Allow("User:CN=alice").AllowHosts().Groups(group).Operations(kadm.OpRead))
	if v, err := ab.shareConsumeOne(t, "alice", topic, group); err != nil || v != "v" {
		t.Fatalf("share consume with READ on group and topic: %q %v", v, err)
	}

	// A heartbeat subscribing to a topic alice may not describe:
	// TOPIC_AUTHORIZATION_FAILED (v1), whether or not the topic exists.
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.MemberEpoch = group, "AAAAAAAAAAAAAAAAAAAAAA", 0
	hb.SubscribedTopicNames = []string{topic, "secret"}
	resp, err := hb.RequestWith(testCtx(t), ab.client(t, "alice").Broker(0))
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.TopicAuthorizationFailed.Code || resp.ErrorMessage != nil {
		t.Fatalf("heartbeat subscribing to secret: %d %v", resp.ErrorCode, resp.ErrorMessage)
	}

	// ShareFetch of the topic by bob, who may READ the group only: the
	// partition answers TOPIC_AUTHORIZATION_FAILED, without a message.
	ab.grant(t, kadm.NewACLs().Allow("User:CN=bob").AllowHosts().Groups(group).Operations(kadm.OpRead))
	topics, err := ab.admin(t).ListTopics(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	sf := kmsg.NewPtrShareFetchRequest()
	sf.GroupID, sf.MemberID, sf.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr("BBBBBBBBBBBBBBBBBBBBBB"), 0
	sf.MaxRecords, sf.BatchSize, sf.MaxBytes = 10, 10, 1<<20
	st := kmsg.NewShareFetchRequestTopic()
	st.TopicID = topics[topic].ID
	st.Partitions = append(st.Partitions, kmsg.NewShareFetchRequestTopicPartition())
	sf.Topics = append(sf.Topics, st)
	fr, err := sf.RequestWith(testCtx(t), ab.client(t, "bob").Broker(0))
	if err != nil {
		t.Fatal(err)
	}
	if fr.ErrorCode != 0 || len(fr.Topics) != 1 || fr.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code ||
		fr.Topics[0].Partitions[0].ErrorMessage != nil {
		t.Fatalf("bob's ShareFetch: %+v", fr)
	}
}
