package broker

// ConsumerGroupHeartbeat (key 68), v0-v1: KIP-848 consumer groups.
//
//   - Membership, epochs, the uniform and range assignors, revocation
//     before reassignment and the session and rebalance timeouts are the
//     group package's (groups.md 848-epochs, 848-revoke-first,
//     848-fencing, 848-timeouts); this handler translates.
//   - v0: a join (epoch 0) with an empty member ID gets one the broker
//     made, returned in MemberID. v1 (KIP-1082): the client makes the
//     member ID and every request must carry it.
//   - Owned partitions (Topics) name topics by ID; the answer's Assignment
//     is the member's whole assignment, sent on a join, on a full request
//     (rebalance timeout, subscription and owned partitions all set) and
//     whenever the assignment changed.
//   - SubscribedTopicRegex (v1) must match whole topic names (Go's
//     regexp is RE2, the syntax of Kafka's RE2/J); one that does not
//     compile answers INVALID_REGULAR_EXPRESSION. Topics it matches are
//     looked up on every heartbeat, so a new topic reaches the group on
//     its members' next heartbeat rather than after Kafka's refresh.
//   - A join (epoch 0) on a classic group without members turns it into a
//     KIP-848 group, offsets included (groups.md empty-upgrade); on a
//     classic group with members it answers GROUP_ID_NOT_FOUND
//     (online-upgrade-not-served).
//   - Errors: INVALID_REQUEST, GROUP_ID_NOT_FOUND (another group type, or
//     a non-zero epoch for a group that does not exist),
//     UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, FENCED_INSTANCE_ID,
//     UNRELEASED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION,
//     GROUP_MAX_SIZE_REACHED, each with a message.
//   - Authorization (docs/security.md api-authorization): READ on the group
//     (else GROUP_AUTHORIZATION_FAILED), DESCRIBE on every subscribed topic
//     (else TOPIC_AUTHORIZATION_FAILED), without a message.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"slices"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/cluster"

	"github.com/sharebroker/sharebroker/group"
)

func init() { register(68, 0, 1, handleConsumerGroupHeartbeat) }

func handleConsumerGroupHeartbeat(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ConsumerGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	in := group.ConsumerHeartbeatInput{
		Version:              req.Version,
		GroupID:              req.Group,
		MemberID:             req.MemberID,
		MemberEpoch:          req.MemberEpoch,
		InstanceID:           req.InstanceID,
		RackID:               req.RackID,
		RebalanceTimeoutMs:   req.RebalanceTimeoutMillis,
		SubscribedTopicNames: req.SubscribedTopicNames,
		SubscribedTopicRegex: req.SubscribedTopicRegex,
		ServerAssignor:       req.ServerAssignor,
		ClientID:             r.header.ClientID,
		ClientHost:           r.conn.clientHost(),
	}
	if req.Topics != nil {
		in.Owned = make([]group.TopicPartitions, 0, len(req.Topics))
		for _, t := range req.Topics {
			in.Owned = append(in.Owned, group.TopicPartitions{TopicID: t.TopicID, Partitions: t.Partitions})
		}
	}
	if code := r.subscriptionDenied(req.Group, req.SubscribedTopicNames); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	err := b.notCoordinator(r.conn, cluster.Group, req.Group)
	var res group.ConsumerHeartbeatResult
	if err == nil {
		res, err = b.consumerGroups.Heartbeat(in, b.clock.Now())
	}
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = codeFor(err), errMessage(err)
		return resp, nil
	}
	resp.MemberID = &res.MemberID
	resp.MemberEpoch = res.MemberEpoch
	resp.HeartbeatIntervalMillis = int32(res.HeartbeatInterval.Milliseconds())
	if res.Assignment != nil {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
		for _, tp := range res.Assignment {
			t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			t.TopicID, t.Partitions = tp.TopicID, tp.Partitions
			a.Topics = append(a.Topics, t)
		}
		resp.Assignment = &a
	}
	return resp, nil
}

// subscriptionDenied is the error code of a group heartbeat (consumer or
// share) the principal may not send, as KafkaApis checks before the
// coordinator: GROUP_AUTHORIZATION_FAILED without READ on the group, then
// TOPIC_AUTHORIZATION_FAILED when any subscribed topic may not be
// described (each refused topic is counted). 0 when allowed.
func (r *request) subscriptionDenied(groupID string, topics []string) int16 {
	if !r.authorized(acl.OpRead, acl.ResourceGroup, groupID) {
		return kerr.GroupAuthorizationFailed.Code
	}
	var denied bool
	for i, t := range topics {
		if slices.Contains(topics[:i], t) {
			continue
		}
		if !r.authorized(acl.OpDescribe, acl.ResourceTopic, t) {
			denied = true
		}
	}
	if denied {
		return kerr.TopicAuthorizationFailed.Code
	}
	return 0
}
