package broker

// ShareGroupHeartbeat (key 76), v1 (v0 was Kafka 4.0's early access and is
// not advertised, as in Kafka 4.1+).
//
//   - Membership, epochs, session timeouts and the simple assignor are the
//     group package's (share-groups.md §4); this handler translates.
//   - Join with epoch 0 and a member ID the client generated; leave with -1.
//     The answer carries the member's whole assignment when it joined,
//     changed its subscription, or its assignment changed; otherwise none.
//   - Leaving or being fenced does not touch the member's acquired records:
//     they stay acquired until its share session closes or the locks expire
//     (§1.2, Kafka's behaviour).
//   - Errors: INVALID_REQUEST, GROUP_ID_NOT_FOUND (a group of another type,
//     or a non-zero epoch for an unknown group), UNKNOWN_MEMBER_ID,
//     FENCED_MEMBER_EPOCH, GROUP_MAX_SIZE_REACHED, each with a message.
//   - Authorization (docs/security.md api-authorization): READ on the
//     group, else GROUP_AUTHORIZATION_FAILED; then, for a valid member ID,
//     DESCRIBE on every subscribed topic, else TOPIC_AUTHORIZATION_FAILED
//     (v1); both without a message, as Kafka's getErrorResponse.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/cluster"

	"github.com/sharebroker/sharebroker/group"
)

func init() { register(76, 1, 1, handleShareGroupHeartbeat) }

func handleShareGroupHeartbeat(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ShareGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	// Kafka checks the member ID between the group and the topics: an
	// invalid one is refused below, whatever the topics.
	topics := req.SubscribedTopicNames
	if group.CheckMemberID(req.MemberID) != nil {
		topics = nil
	}
	if code := r.subscriptionDenied(req.GroupID, topics); code != 0 {
		resp.ErrorCode = code // and a null message, as Kafka's getErrorResponse
		return resp, nil
	}
	if err := b.notCoordinator(r.conn, cluster.Group, req.GroupID); err != nil {
		resp.ErrorCode, resp.ErrorMessage = codeFor(err), errMessage(err)
		return resp, nil
	}
	res, err := b.shareGroups.Heartbeat(group.ShareHeartbeatInput{
		GroupID:              req.GroupID,
		MemberID:             req.MemberID,
		MemberEpoch:          req.MemberEpoch,
		RackID:               req.RackID,
		SubscribedTopicNames: req.SubscribedTopicNames,
		ClientID:             r.header.ClientID,
		ClientHost:           r.conn.clientHost(),
	}, b.clock.Now())
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = codeFor(err), errMessage(err)
		return resp, nil
	}
	memberID := req.MemberID
	resp.MemberID = &memberID
	resp.MemberEpoch = res.MemberEpoch
	resp.HeartbeatIntervalMillis = int32(res.HeartbeatInterval.Milliseconds())
	if res.Assignment != nil {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		a.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
		for _, tp := range res.Assignment {
			p := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			p.TopicID, p.Partitions = tp.TopicID, tp.Partitions
			a.TopicPartitions = append(a.TopicPartitions, p)
		}
		resp.Assignment = &a
	}
	return resp, nil
}
