package broker_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createTopic makes topic as the super user.
func (ab *aclBroker) createTopic(t *testing.T, topic string) {
	t.Helper()
	if _, err := ab.admin(t).CreateTopic(testCtx(t), 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
}

// produceOne produces one record to topic as cn and returns the error.
func (ab *aclBroker) produceOne(t *testing.T, cn, topic string, opts ...kgo.Opt) error {
	t.Helper()
	cl := ab.client(t, cn, opts...)
	return cl.ProduceSync(testCtx(t), &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
}

// consumeOne fetches the first record of topic as cn, without a group,
// and returns its value or the first error the client reports.
func (ab *aclBroker) consumeOne(t *testing.T, cn, topic string) (string, error) {
	t.Helper()
	cl := ab.client(t, cn, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := testCtx(t)
	rec, err := firstRecord(ctx, cl)
	if err != nil {
		return "", err
	}
	return string(rec.Value), nil
}

// metadataOf asks Metadata for topic by name as cn.
func (ab *aclBroker) metadataOf(t *testing.T, cn, topic string) kmsg.MetadataResponseTopic {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.IncludeTopicAuthorizedOperations = true
	resp, err := req.RequestWith(testCtx(t), ab.client(t, cn))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0]
}

// listsTopic reports whether Metadata of all topics, as cn, lists topic.
func (ab *aclBroker) listsTopic(t *testing.T, cn, topic string) bool {
	t.Helper()
	topics, err := kadm.NewClient(ab.client(t, cn)).ListTopics(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return slices.Contains(topics.Names(), topic)
}

// Rules: metadata-hides, deny-wins, api-authorization (Produce, Fetch,
// Metadata, ListOffsets).
func TestACLProduceConsume(t *testing.T) {
	ab := startACLBroker(t, nil)
	const topic = "orders"
	ab.createTopic(t, topic)

	// No ACLs: refused everything, and the topic is invisible.
	if err := ab.produceOne(t, "alice", topic); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce without ACLs: %v", err)
	}
	if _, err := ab.consumeOne(t, "alice", topic); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("consume without ACLs: %v", err)
	}
	if ab.listsTopic(t, "alice", topic) {
		t.Fatal("Metadata of all topics lists a topic alice may not describe")
	}
	if mt := ab.metadataOf(t, "alice", topic); mt.ErrorCode != kerr.TopicAuthorizationFailed.Code || mt.TopicID != [16]byte{} || mt.AuthorizedOperations != -2147483648 {
		t.Fatalf("Metadata of %s: %+v", topic, mt)
	}
	// Auto-creation needs CREATE: refused, not created.
	if mt := ab.metadataOf(t, "alice", "fresh"); mt.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("Metadata of an unknown topic: %+v", mt)
	}

	// Granted WRITE and READ (each implies DESCRIBE): it works.
	ab.grant(t, kadm.NewACLs().Allow("User:CN=alice").AllowHosts().Topics(topic).Operations(kadm.OpWrite, kadm.OpRead))
	if err := ab.produceOne(t, "alice", topic); err != nil {
		t.Fatalf("produce with WRITE: %v", err)
	}
	if v, err := ab.consumeOne(t, "alice", topic); err != nil || v != "v" {
		t.Fatalf("consume with READ: %q %v", v, err)
	}
	if !ab.listsTopic(t, "alice", topic) {
		t.Fatal("Metadata of all topics hides a topic alice may read")
	}
	// READ|WRITE|DESCRIBE: bits 3, 4 and 8 (rule authorized-operations).
	if mt := ab.metadataOf(t, "alice", topic); mt.ErrorCode != 0 || mt.AuthorizedOperations != 1<<3|1<<4|1<<8 {
		t.Fatalf("Metadata of %s: code %d operations %b", topic, mt.ErrorCode, mt.AuthorizedOperations)
	}

	// A DENY for everyone beats alice's ALLOW (rule deny-wins).
	ab.grant(t, kadm.NewACLs().Deny("User:*").DenyHosts().Topics(topic).Operations(kadm.OpWrite))
	if err := ab.produceOne(t, "alice", topic, kgo.DisableIdempotentWrite()); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce under a DENY: %v", err)
	}
	// An idempotent producer is refused earlier: its one WRITE is
	// shadowed, so it may write no topic at all (rule by-resource-type)
	// and InitProducerId answers CLUSTER_AUTHORIZATION_FAILED.
	if err := ab.produceOne(t, "alice", topic); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("idempotent produce under a DENY: %v", err)
	}
	if v, err := ab.consumeOne(t, "alice", topic); err != nil || v != "v" {
		t.Fatalf("consume under a DENY of WRITE only: %q %v", v, err)
	}

	// DeleteAcls takes READ away again.
	if _, err := ab.admin(t).DeleteACLs(testCtx(t), kadm.NewACLs().Allow("User:CN=alice").AllowHosts().Topics(topic).Operations(kadm.OpRead)); err != nil {
		t.Fatal(err)
	}
	if _, err := ab.consumeOne(t, "alice", topic); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("consume after DeleteAcls: %v", err)
	}
	if got := denials(t, ab.b, "TOPIC"); got == 0 {
		t.Fatal("no TOPIC denial counted")
	}
}

// Rules: prefixed-match, super-users, no-acl-default.
func TestACLPrefixedSuperUserAllowEveryone(t *testing.T) {
	t.Run("prefixed", func(t *testing.T) {
		ab := startACLBroker(t, nil)
		ab.createTopic(t, "logs.app")
		ab.createTopic(t, "logsapp")
		ab.grant(t, kadm.NewACLs().Allow("User:CN=bob").AllowHosts().Topics("logs.").
			ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite))
		if err := ab.produceOne(t, "bob", "logs.app"); err != nil {
			t.Fatalf("produce under the prefix: %v", err)
		}
		if err := ab.produceOne(t, "bob", "logsapp"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("produce outside the prefix: %v", err)
		}
	})
	t.Run("super user", func(t *testing.T) {
		ab := startACLBroker(t, map[string]string{"super.users": "User:CN=nobody; " + adminPrincipal})
		ab.grant(t, kadm.NewACLs().Deny("User:*").DenyHosts().Topics("*").Operations(kadm.OpAll))
		// The super user auto-creates and produces through the DENY.
		if err := ab.produceOne(t, "admin", "made-by-admin", kgo.AllowAutoTopicCreation()); err != nil {
			t.Fatalf("super user: %v", err)
		}
	})
	t.Run("allow everyone if no ACL", func(t *testing.T) {
		ab := startACLBroker(t, map[string]string{"allow.everyone.if.no.acl.found": "true"})
		ab.createTopic(t, "open")
		ab.createTopic(t, "guarded")
		ab.grant(t, kadm.NewACLs().Allow("User:CN=bob").AllowHosts().Topics("guarded").Operations(kadm.OpWrite))
		if err := ab.produceOne(t, "carol", "open"); err != nil {
			t.Fatalf("a topic without ACLs: %v", err)
		}
		if err := ab.produceOne(t, "carol", "guarded"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("a topic with an ACL for someone else: %v", err)
		}
	})
}

// firstRecord polls cl until it has a record or an error, and returns the
// first record or the first error the client reports.
func firstRecord(ctx context.Context, cl *kgo.Client) (*kgo.Record, error) {
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for _, e := range fs.Errors() {
			return nil, e.Err
		}
		if recs := fs.Records(); len(recs) > 0 {
			return recs[0], nil
		}
	}
}
