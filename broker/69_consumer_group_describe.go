package broker

// ConsumerGroupDescribe (key 69), v0-v1: KIP-848 consumer groups.
//
//   - Each group: state (Empty, Assigning, Reconciling, Stable), group and
//     assignment epochs, the assignor of its target assignment, and its
//     members in join order with their current and target assignments.
//   - An empty ID answers INVALID_GROUP_ID; an unknown ID or a group of
//     another type GROUP_ID_NOT_FOUND, as in Kafka.
//   - v1 adds MemberType: 1 (consumer protocol) for every member, as no
//     classic member joins a consumer group here.
//   - IncludeAuthorizedOperations: the group operations the principal may
//     perform (authorized-operations); otherwise INT32_MIN, as Kafka sends.
//   - Authorization: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED
//     (refused groups first), and a group whose members are (or are to be) assigned a topic
//     the principal may not DESCRIBE answers TOPIC_AUTHORIZATION_FAILED.

import (
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/cluster"

	"github.com/sharebroker/sharebroker/group"
)

func init() { register(69, 0, 1, handleConsumerGroupDescribe) }

func handleConsumerGroupDescribe(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	// Refused groups come first, as in KafkaApis.handleConsumerGroupDescribe.
	allowed := r.describableGroups(req.Groups, func(id string) {
		g := kmsg.NewConsumerGroupDescribeResponseGroup()
		g.Group, g.AuthorizedOperations, g.ErrorCode = id, math.MinInt32, kerr.GroupAuthorizationFailed.Code
		resp.Groups = append(resp.Groups, g)
	})
	if b.authz != nil {
		defer hideUndescribable(r, resp)
	}
	for _, d := range b.consumerGroups.Describe(allowed) {
		g := kmsg.NewConsumerGroupDescribeResponseGroup()
		g.Group = d.GroupID
		var described bool
		g.ErrorCode, g.ErrorMessage, g.AuthorizedOperations, described = b.describedGroupHead(r, d.GroupID, d.Err, req.IncludeAuthorizedOperations)
		if !described {
			resp.Groups = append(resp.Groups, g)
			continue
		}
		g.State, g.Epoch, g.AssignmentEpoch, g.AssignorName = string(d.State), d.GroupEpoch, d.AssignmentEpoch, d.AssignorName
		for _, m := range d.Members {
			gm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
			gm.MemberID, gm.InstanceID, gm.RackID, gm.MemberEpoch = m.MemberID, m.InstanceID, m.RackID, m.MemberEpoch
			gm.ClientID, gm.ClientHost, gm.SubscribedTopics = m.ClientID, m.ClientHost, m.SubscribedTopicNames
			gm.SubscribedTopicRegex = m.SubscribedTopicRegex
			if gm.SubscribedTopics == nil {
				gm.SubscribedTopics = []string{}
			}
			gm.Assignment, gm.TargetAssignment = kmsgAssignment(m.Assignment), kmsgAssignment(m.TargetAssignment)
			gm.MemberType = 1
			g.Members = append(g.Members, gm)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}

// describedGroupHead is what ConsumerGroupDescribe and ShareGroupDescribe
// answer for a group before its members: NOT_COORDINATOR when another
// node coordinates it, else err, the coordinator's (code and message);
// the operations the principal may perform when includeOps asks for them
// and the group is described, else INT32_MIN. described is false for a
// group answered with an error alone.
func (b *Broker) describedGroupHead(r *request, id string, err error, includeOps bool) (code int16, msg *string, ops int32, described bool) {
	if nc := b.notCoordinator(r.conn, cluster.Group, id); nc != nil {
		err = nc
	}
	if err != nil {
		return codeFor(err), errMessage(err), math.MinInt32, false
	}
	ops = math.MinInt32
	if includeOps {
		ops = r.authorizedOperations(acl.ResourceGroup, id)
	}
	return 0, nil, ops, true
}

// hideUndescribable replaces a described group whose members' assignment
// or target assignment names a topic the principal may not DESCRIBE with
// TOPIC_AUTHORIZATION_FAILED and no members, as Kafka does: a client may
// not learn of topics through a group.
func hideUndescribable(r *request, resp *kmsg.ConsumerGroupDescribeResponse) {
	may := topicDescribeMemo(r)
	for i := range resp.Groups {
		g := &resp.Groups[i]
		hidden := false
		for _, m := range g.Members {
			for _, tp := range slices.Concat(m.Assignment.TopicPartitions, m.TargetAssignment.TopicPartitions) {
				if !may(tp.Topic) {
					hidden = true
				}
			}
		}
		if hidden {
			ng := kmsg.NewConsumerGroupDescribeResponseGroup()
			ng.Group, ng.ErrorCode = g.Group, kerr.TopicAuthorizationFailed.Code
			ng.ErrorMessage = kmsg.StringPtr(describedTopicsRefused)
			ng.Members = []kmsg.ConsumerGroupDescribeResponseGroupMember{}
			*g = ng
		}
	}
}

// describedTopicsRefused is Kafka's message for a described group hidden
// for its topics.
const describedTopicsRefused = "The group has described topic(s) that the client is not authorized to describe."

// topicDescribeMemo asks DESCRIBE on each topic once per request, as
// Kafka's filterByAuthorized asks each distinct name once.
func topicDescribeMemo(r *request) func(topic string) bool {
	allowed := make(map[string]bool)
	return func(topic string) bool {
		ok, seen := allowed[topic]
		if !seen {
			ok = r.authorized(acl.OpDescribe, acl.ResourceTopic, topic)
			allowed[topic] = ok
		}
		return ok
	}
}

func kmsgAssignment(tps []group.TopicPartitions) kmsg.Assignment {
	a := kmsg.NewAssignment()
	a.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, tp := range tps {
		t := kmsg.NewAssignmentTopicPartition()
		t.TopicID, t.Topic, t.Partitions = tp.TopicID, tp.Topic, tp.Partitions
		a.TopicPartitions = append(a.TopicPartitions, t)
	}
	return a
}
