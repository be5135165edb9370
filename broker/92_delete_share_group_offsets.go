package broker

// DeleteShareGroupOffsets (key 92), v0 (share-groups.md §5.3).
//
//   - The group must exist (else top-level GROUP_ID_NOT_FOUND, also for a
//     group of another kind) and have no members (NON_EMPTY_GROUP); an
//     empty ID is INVALID_GROUP_ID.
//   - Each topic's share state for the group is deleted; the next read
//     initialises it again from share.auto.offset.reset. An unknown topic,
//     or one without share state for the group, answers
//     UNKNOWN_TOPIC_OR_PARTITION.
//   - Authorization (docs/security.md api-authorization): DELETE on the
//     group (else GROUP_AUTHORIZATION_FAILED), READ on each topic (else
//     TOPIC_AUTHORIZATION_FAILED without a topic ID).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"

	"github.com/sharebroker/sharebroker/storage"
)

func init() { register(92, 0, 0, handleDeleteShareGroupOffsets) }

func handleDeleteShareGroupOffsets(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	if err := b.groupGate(r, acl.OpDelete, req.GroupID); err != nil {
		resp.ErrorCode, resp.ErrorMessage = codeFor(err), errMessage(err)
		return resp, nil
	}
	if err := b.shareGroups.RequireEmpty(req.GroupID, false); err != nil {
		resp.ErrorCode, resp.ErrorMessage = codeFor(err), errMessage(err)
		return resp, nil
	}
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		st.Topic = rt.Topic
		var err error
		if !r.authorized(acl.OpRead, acl.ResourceTopic, rt.Topic) {
			err = errTopicAuthorization // no topic ID, as Kafka answers it
		} else if t := b.store.Topic(rt.Topic); t == nil {
			err = fmt.Errorf("%w: %q", storage.ErrUnknownTopic, rt.Topic)
		} else {
			st.TopicID = t.ID
			if b.shareServing.DropTopic(req.GroupID, t.ID) == 0 {
				err = fmt.Errorf("%w: there is no offset information to delete", storage.ErrUnknownTopic)
			}
		}
		st.ErrorCode, st.ErrorMessage = codeFor(err), errMessage(err)
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
