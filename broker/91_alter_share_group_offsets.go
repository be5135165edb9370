package broker

// AlterShareGroupOffsets (key 91), v0 (share-groups.md §5.2).
//
//   - The group must have no members (else top-level NON_EMPTY_GROUP); a
//     missing group is created, empty. An empty ID is INVALID_GROUP_ID, an
//     ID of another kind of group GROUP_ID_NOT_FOUND.
//   - Each partition's share state is replaced: SPSO = StartOffset, the
//     in-flight window empty, every delivery count forgotten. A partition
//     never read before gets its state now.
//   - An unknown topic, or a partition the topic does not have, answers
//     UNKNOWN_TOPIC_OR_PARTITION; a negative StartOffset INVALID_REQUEST.
//   - Authorization (docs/security.md api-authorization): READ on the group
//     (else GROUP_AUTHORIZATION_FAILED), READ on each topic (else
//     TOPIC_AUTHORIZATION_FAILED).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"

	"github.com/sharebroker/sharebroker/storage"
)

func init() { register(91, 0, 0, handleAlterShareGroupOffsets) }

func handleAlterShareGroupOffsets(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	if err := b.groupGate(r, acl.OpRead, req.GroupID); err != nil {
		resp.ErrorCode, resp.ErrorMessage = codeFor(err), errMessage(err)
		return resp, nil
	}
	if err := b.shareGroups.RequireEmpty(req.GroupID, true); err != nil {
		resp.ErrorCode, resp.ErrorMessage = codeFor(err), errMessage(err)
		return resp, nil
	}
	for _, rt := range req.Topics {
		st := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		st.Topic = rt.Topic
		t := b.store.Topic(rt.Topic)
		if t != nil {
			st.TopicID = t.ID
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			var err error
			switch {
			case !r.authorized(acl.OpRead, acl.ResourceTopic, rt.Topic):
				err = errTopicAuthorization
			case t == nil:
				err = fmt.Errorf("%w: %q", storage.ErrUnknownTopic, rt.Topic)
			case t.Partition(rp.Partition) == nil:
				err = fmt.Errorf("%w: %s has no partition %d", storage.ErrUnknownTopic, rt.Topic, rp.Partition)
			case rp.StartOffset < 0:
				err = fmt.Errorf("%w: start offset %d is negative", errInvalidRequest, rp.StartOffset)
			default:
				b.shareServing.Get(req.GroupID, t, t.Partition(rp.Partition)).Share.ResetStart(rp.StartOffset)
			}
			sp.ErrorCode, sp.ErrorMessage = codeFor(err), errMessage(err)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
