package broker

// DeleteTopics (key 20), v1-v6.
//
//   - Topics are named in TopicNames (v1-v5) or in Topics (v6), each by
//     name or, with a null name, by topic ID.
//   - An unknown name answers UNKNOWN_TOPIC_OR_PARTITION, an unknown ID
//     UNKNOWN_TOPIC_ID, a zero ID INVALID_REQUEST, and a name or ID given
//     twice INVALID_REQUEST (once).
//   - With delete.topic.enable=false every topic answers
//     TOPIC_DELETION_DISABLED, or INVALID_REQUEST before v3 (that code did
//     not exist yet), as Kafka's ControllerApis.deleteTopics does. Kafka
//     fails the whole request there, so the ErrorMessage is null
//     (answers-as-kafka).
//   - A deleted topic's records are gone at once; its name can be reused.
//   - ErrorMessage from v5; TopicID in the answer from v6.
//   - Authorization (docs/security.md api-authorization): DELETE on CLUSTER,
//     else DESCRIBE and DELETE on each topic (deleteTopicDenied); a refusal
//     is TOPIC_AUTHORIZATION_FAILED.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/storage"
)

func init() { register(20, 1, 6, handleDeleteTopics) }

// deleteTopicDenied decides one topic of a DeleteTopics without DELETE on
// CLUSTER, as ControllerApis.deleteTopics does: by name, a topic it may
// not DESCRIBE is refused whether or not it exists, one it may describe
// but not DELETE is refused if it exists; by ID, an existing topic it may
// not DELETE is refused, named in the answer only if it may describe it.
// An unknown topic it may describe is left to the deletion, which answers
// it.
func (r *request) deleteTopicDenied(rt kmsg.DeleteTopicsRequestTopic, st *kmsg.DeleteTopicsResponseTopic) bool {
	store := r.conn.b.store
	if rt.Topic != nil {
		if !r.authorized(acl.OpDescribe, acl.ResourceTopic, *rt.Topic) {
			return true
		}
		return store.Topic(*rt.Topic) != nil && !r.authorized(acl.OpDelete, acl.ResourceTopic, *rt.Topic)
	}
	t := store.TopicByID(rt.TopicID)
	if t == nil {
		return false
	}
	describable := r.authorized(acl.OpDescribe, acl.ResourceTopic, t.Name)
	if r.authorized(acl.OpDelete, acl.ResourceTopic, t.Name) {
		return false
	}
	if describable {
		name := t.Name
		st.Topic = &name
	}
	return true
}

func handleDeleteTopics(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	targets := req.Topics
	if req.Version < 6 {
		targets = nil
		for _, name := range req.TopicNames {
			t := kmsg.NewDeleteTopicsRequestTopic()
			t.Topic = &name
			targets = append(targets, t)
		}
	}
	names := make(map[string]int)
	ids := make(map[storage.TopicID]int)
	for _, rt := range targets {
		if rt.Topic != nil {
			names[*rt.Topic]++
		} else {
			ids[rt.TopicID]++
		}
	}
	answeredName := make(map[string]bool)
	answeredID := make(map[storage.TopicID]bool)
	// DELETE on CLUSTER (asked quietly) covers every topic; else each
	// needs DESCRIBE and DELETE (ControllerApis.deleteTopics).
	cluster := r.authorizedQuietly(acl.OpDelete, acl.ResourceCluster, acl.ClusterName)
	for _, rt := range targets {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var err error
		switch {
		case rt.Topic != nil && answeredName[*rt.Topic], rt.Topic == nil && answeredID[rt.TopicID]:
			continue
		case rt.Topic != nil && names[*rt.Topic] > 1:
			answeredName[*rt.Topic] = true
			err = fmt.Errorf("%w: topic %q appears %d times in the request", errInvalidRequest, *rt.Topic, names[*rt.Topic])
		case rt.Topic == nil && ids[rt.TopicID] > 1:
			answeredID[rt.TopicID] = true
			err = fmt.Errorf("%w: topic ID %x appears %d times in the request", errInvalidRequest, rt.TopicID[:], ids[rt.TopicID])
		case rt.Topic == nil && rt.TopicID == [16]byte{}:
			err = fmt.Errorf("%w: neither a topic name nor a topic ID was given", errInvalidRequest)
		case !b.cfg.props.Bool("delete.topic.enable"):
			err = fmt.Errorf("%w (delete.topic.enable=false)", storage.ErrTopicDeletionDisabled)
			if req.Version < 3 {
				err = fmt.Errorf("%w: topic deletion is disabled (delete.topic.enable=false)", errInvalidRequest)
			}
		case !cluster && r.deleteTopicDenied(rt, &st):
			err = errTopicAuthorization
		default:
			var t *storage.Topic
			if rt.Topic != nil {
				t, err = b.store.DeleteTopic(*rt.Topic)
			} else {
				t, err = b.store.DeleteTopicByID(rt.TopicID)
			}
			if err == nil {
				name := t.Name
				st.Topic, st.TopicID = &name, t.ID
				b.forgetTopic(name)
				b.log.Info("topic deleted", attrTopic, t.Name)
			}
		}
		if err != nil {
			st.ErrorCode, st.ErrorMessage = codeFor(err), errMessage(err)
			if !b.cfg.props.Bool("delete.topic.enable") {
				st.ErrorMessage = nil
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
