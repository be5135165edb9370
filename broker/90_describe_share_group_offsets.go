package broker

// DescribeShareGroupOffsets (key 90), v0-v1 (share-groups.md §5.1).
//
//   - Per group, per partition: StartOffset is the SPSO, LeaderEpoch 0, and
//     Lag (v1+) the records still to be delivered: high watermark minus SPSO
//     minus the records already finished (acknowledged or archived) inside
//     the in-flight window.
//   - A partition without share state answers StartOffset -1 and Lag -1 with
//     no error; an unknown topic answers its partitions the same way with a
//     zero topic ID. A group that does not exist is not an error: it simply
//     has no state, as in Kafka.
//   - Topics null asks for everything: every partition with share state,
//     and every partition of a topic a member subscribes to (StartOffset -1
//     when never read). Topics empty answers the group with no topics.
//   - Authorization (docs/security.md api-authorization): DESCRIBE on each
//     group (else GROUP_AUTHORIZATION_FAILED), DESCRIBE on each topic
//     (named: TOPIC_AUTHORIZATION_FAILED after the others; all: left out).

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/cluster"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/shareserve"
)

func init() { register(90, 0, 1, handleDescribeShareGroupOffsets) }

func handleDescribeShareGroupOffsets(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	for _, rg := range req.Groups {
		g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		g.GroupID = rg.GroupID
		if !r.authorized(acl.OpDescribe, acl.ResourceGroup, rg.GroupID) {
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code // a null message, as Kafka
			resp.Groups = append(resp.Groups, g)
			continue
		}
		if err := b.notCoordinator(r.conn, cluster.Group, rg.GroupID); err != nil {
			g.ErrorCode, g.ErrorMessage = codeFor(err), errMessage(err)
			resp.Groups = append(resp.Groups, g)
			continue
		}
		// DESCRIBE on each topic: describe-all leaves out the others;
		// named ones refused answer TOPIC_AUTHORIZATION_FAILED, with
		// Kafka's message and no topic ID, after the rest.
		var refused []kmsg.DescribeShareGroupOffsetsResponseGroupTopic
		wanted := rg.Topics
		if wanted == nil {
			wanted = b.shareOffsetTopics(rg.GroupID)
		}
		if b.authz != nil {
			kept := wanted[:0:0]
			for _, rt := range wanted {
				if r.authorized(acl.OpDescribe, acl.ResourceTopic, rt.Topic) {
					kept = append(kept, rt)
					continue
				}
				if rg.Topics == nil {
					continue
				}
				st := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
				st.Topic = rt.Topic
				for _, idx := range rt.Partitions {
					sp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
					sp.Partition, sp.StartOffset, sp.Lag = idx, -1, -1
					sp.ErrorCode, sp.ErrorMessage = codeFor(errTopicAuthorization), errMessage(errTopicAuthorization)
					st.Partitions = append(st.Partitions, sp)
				}
				refused = append(refused, st)
			}
			wanted = kept
		}
		for _, rt := range wanted {
			st := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			st.Topic = rt.Topic
			t := b.store.Topic(rt.Topic)
			if t != nil {
				st.TopicID = t.ID
			}
			for _, idx := range rt.Partitions {
				sp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				sp.Partition = idx
				sp.StartOffset, sp.Lag = -1, -1
				if t != nil {
					key := shareserve.Key{Group: rg.GroupID, TopicPartition: shareserve.TopicPartition{TopicID: t.ID, Partition: idx}}
					if p := b.shareServing.Lookup(key); p != nil {
						sp.StartOffset, sp.Lag = p.Lag()
					}
				}
				st.Partitions = append(st.Partitions, sp)
			}
			g.Topics = append(g.Topics, st)
		}
		g.Topics = append(g.Topics, refused...)
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}

// shareOffsetTopics lists, for describe-all, every topic partition of the
// group that has share state or that a member subscribes to, by topic name
// in order.
func (b *Broker) shareOffsetTopics(groupID string) []kmsg.DescribeShareGroupOffsetsRequestGroupTopic {
	parts := make(map[string][]int32)
	for _, kp := range b.shareServing.OfGroup(groupID) {
		if t := b.store.TopicByID(kp.Key.TopicID); t != nil {
			parts[t.Name] = append(parts[t.Name], kp.Key.Partition)
		}
	}
	for _, d := range b.shareGroups.Describe([]string{groupID}) {
		for _, m := range d.Members {
			for _, name := range m.SubscribedTopicNames {
				if t := b.store.Topic(name); t != nil {
					for _, p := range t.Partitions() {
						parts[name] = append(parts[name], p.Index)
					}
				}
			}
		}
	}
	var out []kmsg.DescribeShareGroupOffsetsRequestGroupTopic
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		rt.Topic = name
		rt.Partitions = slices.Compact(slices.Sorted(slices.Values(parts[name])))
		out = append(out, rt)
	}
	return out
}
