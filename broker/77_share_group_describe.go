package broker

// ShareGroupDescribe (key 77), v1 (v0 is not advertised, as in Kafka 4.1+).
//
//   - One entry per requested group ID, in request order: state (Empty or
//     Stable), group and assignment epochs, the assignor ("simple"), and
//     each member with client ID and host, rack, subscription and
//     assignment (topic IDs with names).
//   - An empty ID answers INVALID_GROUP_ID; an unknown one, or one used by
//     another kind of group, GROUP_ID_NOT_FOUND.
//   - IncludeAuthorizedOperations: there are no ACLs, so every group
//     operation is allowed; otherwise the field is INT32_MIN, as Kafka sends.

import (
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/cluster"
	"github.com/sharebroker/sharebroker/group"
)

// allGroupOperations is the bit set of every ACL operation on a group:
// READ (3), DELETE (6), DESCRIBE (8), DESCRIBE_CONFIGS (10), ALTER_CONFIGS
// (11), as Kafka reports for a principal allowed everything.
const allGroupOperations = 1<<3 | 1<<6 | 1<<8 | 1<<10 | 1<<11

func init() { register(77, 1, 1, handleShareGroupDescribe) }

func handleShareGroupDescribe(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ShareGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	for _, d := range b.shareGroups.Describe(req.GroupIDs) {
		if err := b.notCoordinator(r.conn, cluster.Group, d.GroupID); err != nil {
			d = group.ShareDescribedGroup{GroupID: d.GroupID, Err: err}
		}
		g := kmsg.NewShareGroupDescribeResponseGroup()
		g.GroupID = d.GroupID
		g.AuthorizedOperations = math.MinInt32
		if d.Err != nil {
			g.ErrorCode, g.ErrorMessage = codeFor(d.Err), errMessage(d.Err)
			resp.Groups = append(resp.Groups, g)
			continue
		}
		if req.IncludeAuthorizedOperations {
			g.AuthorizedOperations = allGroupOperations
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
