package broker

// ShareGroupDescribe (key 77), v1 (v0 is not advertised, as in Kafka 4.1+).
//
//   - One entry per requested group ID, in request order: state (Empty or
//     Stable), group and assignment epochs, the assignor ("simple"), and
//     each member with client ID and host, rack, subscription and
//     assignment (topic IDs with names).
//   - An empty ID answers INVALID_GROUP_ID; an unknown one, or one used by
//     another kind of group, GROUP_ID_NOT_FOUND.
//   - IncludeAuthorizedOperations: the group operations the principal may
//     perform (authorized-operations); otherwise INT32_MIN, as Kafka sends.
//   - Authorization: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED
//     (refused groups first); a group whose members are assigned a topic
//     the principal may not DESCRIBE answers TOPIC_AUTHORIZATION_FAILED with
//     Kafka's message and no members.

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(77, 1, 1, handleShareGroupDescribe) }

func handleShareGroupDescribe(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ShareGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	// Refused groups come first, as in KafkaApis.handleShareGroupDescribe.
	allowed := r.describableGroups(req.GroupIDs, func(id string) {
		g := kmsg.NewShareGroupDescribeResponseGroup()
		g.GroupID, g.AuthorizedOperations, g.ErrorCode = id, math.MinInt32, kerr.GroupAuthorizationFailed.Code
		resp.Groups = append(resp.Groups, g)
	})
	if b.authz != nil {
		defer hideUndescribableShare(r, resp)
	}
	for _, d := range b.shareGroups.Describe(allowed) {
		g := kmsg.NewShareGroupDescribeResponseGroup()
		g.GroupID = d.GroupID
		var described bool
		g.ErrorCode, g.ErrorMessage, g.AuthorizedOperations, described = b.describedGroupHead(r, d.GroupID, d.Err, req.IncludeAuthorizedOperations)
		if !described {
			resp.Groups = append(resp.Groups, g)
			continue
		}
		g.GroupState = string(d.State)
		g.GroupEpoch, g.AssignmentEpoch, g.Assignor = d.GroupEpoch, d.AssignmentEpoch, d.AssignorName
		for _, dm := range d.Members {
			m := kmsg.NewShareGroupDescribeResponseGroupMember()
			m.MemberID, m.RackID, m.MemberEpoch = dm.MemberID, dm.RackID, dm.MemberEpoch
			m.ClientID, m.ClientHost = dm.ClientID, dm.ClientHost
			m.SubscribedTopicNames = dm.SubscribedTopicNames
			for _, tp := range dm.Assignment {
				p := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
				p.TopicID, p.Topic, p.Partitions = tp.TopicID, tp.Topic, tp.Partitions
				m.Assignment.TopicPartitions = append(m.Assignment.TopicPartitions, p)
			}
			g.Members = append(g.Members, m)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}

// hideUndescribableShare is hideUndescribable for share groups: a group
// whose members are assigned a topic the principal may not DESCRIBE
// answers TOPIC_AUTHORIZATION_FAILED without members.
func hideUndescribableShare(r *request, resp *kmsg.ShareGroupDescribeResponse) {
	may := topicDescribeMemo(r)
	for i := range resp.Groups {
		g := &resp.Groups[i]
		hidden := false
		for _, m := range g.Members {
			for _, tp := range m.Assignment.TopicPartitions {
				if !may(tp.Topic) {
					hidden = true
				}
			}
		}
		if hidden {
			ng := kmsg.NewShareGroupDescribeResponseGroup()
			ng.GroupID, ng.ErrorCode = g.GroupID, kerr.TopicAuthorizationFailed.Code
			ng.ErrorMessage = kmsg.StringPtr(describedTopicsRefused)
			ng.Members = []kmsg.ShareGroupDescribeResponseGroupMember{}
			*g = ng
		}
	}
}
