package broker

// ShareAcknowledge (key 79), v1-v2 (v0 is not advertised, as in Kafka 4.1+).
//
// The handler checks the IDs (the first item below), then makes one call,
// shareserve.Service.Acknowledge, which does the rest, and encodes its
// result:
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
	topics := make([]shareserve.AckTopic, len(req.Topics))
	for i, rt := range req.Topics {
		topics[i] = shareserve.AckTopic{TopicID: rt.TopicID, Partitions: make([]shareserve.AckPartition, len(rt.Partitions))}
		for j, rp := range rt.Partitions {
			topics[i].Partitions[j] = shareserve.AckPartition{Partition: rp.Partition, Acks: ackRequestAckBatches(rp.AcknowledgementBatches)}
		}
	}
	node := r.conn.node()
	res := b.shareServing.Acknowledge(shareserve.AckRequest{
		Key:        shareserve.SessionKey{Group: *req.GroupID, Member: *req.MemberID, Node: node},
		Requester:  r,
		Epoch:      req.ShareSessionEpoch,
		Version:    req.Version,
		IsRenewAck: req.IsRenewAck,
		Topics:     topics,
	})
	if res.Err != nil {
		return fail(res.Err)
	}
	b.countShareAcks(node, res.Acks)
	resp.AcquisitionLockTimeoutMillis = int32(res.LockDuration.Milliseconds())
	errs := res.Errs
	for _, rt := range req.Topics {
		st := kmsg.NewShareAcknowledgeResponseTopic()
		st.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.ErrorCode, sp.ErrorMessage = codeFor(errs[0]), errMessage(errs[0])
			errs = errs[1:]
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
