package broker

// ShareAcknowledge (key 79), v1-v2 (v0 is not advertised, as in Kafka 4.1+).
//
//   - Top-level INVALID_REQUEST for a missing group ID or a member ID that
//     is empty or longer than 36 characters.
//   - The share session (share-groups.md §3.2, shareserve.Sessions): epoch 0 is
//     INVALID_SHARE_SESSION_EPOCH (acknowledging cannot open a session); -1
//     needs a session and does not bump; anything else must be the expected
//     epoch and bumps it. The request's partitions do not join the session.
//   - Each partition's batches are validated and applied as ShareFetch's
//     piggybacked acknowledgements are (§2.5, §2.6), all or nothing per
//     partition; the result is the partition's ErrorCode. RENEW needs v2 and
//     IsRenewAck, and re-arms the lock for the group's full lock duration.
//   - Epoch -1: after applying, the session closes and the member's records
//     on its partitions are released (row 8).
//   - AcquisitionLockTimeoutMs (v2) is the group's lock duration, so a
//     member that renewed can compute its new deadline.
//   - A partition another node leads answers UNKNOWN_TOPIC_OR_PARTITION,
//     without CurrentLeader: Kafka's SharePartitionManager.acknowledge
//     finds no share partition in the node's cache, which holds only what
//     it leads (docs/cluster.md share-ack-after-move). Nothing is
//     acknowledged there; after a leader move the records acquired from
//     the old leader are already free on the new one.
//   - Kafka checks neither that the group exists nor that the member is in
//     it; ownership of records is by member ID.
//   - A top-level error has a null ErrorMessage: Kafka answers those with
//     ShareAcknowledgeRequest.getErrorResponse, which sets only the code
//     (answers-as-kafka). Partition errors carry a message.
//   - Authorization (docs/security.md api-authorization): READ on the group
//     (else GROUP_AUTHORIZATION_FAILED), READ on each topic (else
//     TOPIC_AUTHORIZATION_FAILED).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/shareserve"
)

func init() { register(79, 1, 2, handleShareAcknowledge) }

func handleShareAcknowledge(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ShareAcknowledgeRequest)
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	fail := func(err error) (kmsg.Response, error) {
		resp.ErrorCode = codeFor(err)
		return resp, nil
	}
	if req.GroupID != nil && !r.authorized(acl.OpRead, acl.ResourceGroup, *req.GroupID) {
		return fail(errGroupAuthorization)
	}
	if err := validateShareIDs(req.GroupID, req.MemberID); err != nil {
		return fail(err)
	}
	key := shareserve.SessionKey{Group: *req.GroupID, Member: *req.MemberID, Node: r.conn.node()}
	if err := b.shares.Sessions.Acknowledge(key, req.ShareSessionEpoch); err != nil {
		return fail(err)
	}
	resp.AcquisitionLockTimeoutMillis = int32(b.groupConfigs.Share(key.Group).RecordLockDuration.Milliseconds())
	now := b.clock.Now()
	var named []shareserve.TopicPartition
	if b.authz != nil {
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				named = append(named, shareserve.TopicPartition{TopicID: rt.TopicID, Partition: rp.Partition})
			}
		}
	}
	denied := r.shareTopicsDenied(named, nil) // READ on each topic acknowledged
	for _, rt := range req.Topics {
		st := kmsg.NewShareAcknowledgeResponseTopic()
		st.TopicID = rt.TopicID
		counted, failed := false, false
		for _, rp := range rt.Partitions {
			sp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			sp.Partition = rp.Partition
			tp := shareserve.TopicPartition{TopicID: rt.TopicID, Partition: rp.Partition}
			if denied[rt.TopicID] {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			err := b.shares.Acknowledge(key, tp, req.Version, req.IsRenewAck, ackRequestAckBatches(rp.AcknowledgementBatches), now)
			sp.ErrorCode, sp.ErrorMessage = codeFor(err), errMessage(err)
			st.Partitions = append(st.Partitions, sp)
			counted, failed = ackOutcome(counted, failed, err)
		}
		b.countShareAcks(key.Node, rt.TopicID, counted, failed)
		resp.Topics = append(resp.Topics, st)
	}
	if req.ShareSessionEpoch == -1 {
		b.shares.CloseSession(key, b.clock.Now())
	}
	return resp, nil
}
