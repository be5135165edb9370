package broker

// OffsetDelete (key 47), v0.
//
//   - Removes committed offsets of topics the group does not consume
//     (groups.md offset-delete): a partition of a topic a member subscribes
//     to answers GROUP_SUBSCRIBED_TO_TOPIC, a topic or partition that does
//     not exist UNKNOWN_TOPIC_OR_PARTITION. A group without members may
//     lose any offset.
//   - Classic and KIP-848 consumer groups alike; for a KIP-848 group a topic
//     is consumed when a member subscribes to it by name or by regex.
//   - Group errors: GROUP_ID_NOT_FOUND (also for a share group's ID),
//     INVALID_GROUP_ID, NON_EMPTY_GROUP for a group with members whose
//     protocol type is not "consumer" (its subscriptions cannot be read).
//   - Authorization (docs/security.md api-authorization): DELETE on the
//     group (else GROUP_AUTHORIZATION_FAILED), READ on each topic (else
//     TOPIC_AUTHORIZATION_FAILED, after the others).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"

	"github.com/sharebroker/sharebroker/group"
)

func init() { register(47, 0, 0, handleOffsetDelete) }

func handleOffsetDelete(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if err := b.groupGate(r, acl.OpDelete, req.Group); err != nil {
		resp.ErrorCode = codeFor(err)
		return resp, nil
	}
	// Topics the principal may not READ answer TOPIC_AUTHORIZATION_FAILED
	// and stay out of the deletion; they follow the others, as in
	// KafkaApis.handleOffsetDeleteRequest.
	var refused []kmsg.OffsetDeleteResponseTopic
	allowed := req.Topics[:0:0]
	for _, rt := range req.Topics {
		if r.authorized(acl.OpRead, acl.ResourceTopic, rt.Topic) {
			allowed = append(allowed, rt)
			continue
		}
		t := kmsg.NewOffsetDeleteResponseTopic()
		t.Topic = rt.Topic
		for _, p := range rt.Partitions {
			tp := kmsg.NewOffsetDeleteResponseTopicPartition()
			tp.Partition, tp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
			t.Partitions = append(t.Partitions, tp)
		}
		refused = append(refused, t)
	}
	req.Topics = allowed
	defer func() { resp.Topics = append(resp.Topics, refused...) }()
	topics := make([]group.OffsetPartitions, 0, len(req.Topics))
	for _, rt := range req.Topics {
		op := group.OffsetPartitions{Topic: rt.Topic}
		for _, p := range rt.Partitions {
			op.Partitions = append(op.Partitions, p.Partition)
		}
		topics = append(topics, op)
	}
	deleteOffsets := b.classicGroups.DeleteOffsets
	if t, _ := b.groupRegistry.TypeOf(req.Group); t == group.TypeConsumer {
		deleteOffsets = b.consumerGroups.DeleteOffsets
	}
	errs, err := deleteOffsets(req.Group, topics)
	if err != nil {
		resp.ErrorCode = codeFor(err)
		return resp, nil
	}
	for i, rt := range req.Topics {
		t := kmsg.NewOffsetDeleteResponseTopic()
		t.Topic = rt.Topic
		for j, p := range rt.Partitions {
			tp := kmsg.NewOffsetDeleteResponseTopicPartition()
			tp.Partition, tp.ErrorCode = p.Partition, codeFor(errs[i][j])
			t.Partitions = append(t.Partitions, tp)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp, nil
}
