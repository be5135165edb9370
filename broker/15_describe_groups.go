package broker

// DescribeGroups (key 15), v0-v6.
//
//   - Describes classic groups (groups.md describe): state, protocol type,
//     protocol, and members with client ID, host, and, in Stable and
//     CompletingRebalance, metadata and assignment.
//   - A group that does not exist, or an ID of another kind of group, is
//     Dead with no members; from v6 it also answers GROUP_ID_NOT_FOUND
//     (KIP-1043). Share groups are described by ShareGroupDescribe.
//   - IncludeAuthorizedOperations: the group operations the principal may
//     perform (authorized-operations); otherwise INT32_MIN, as Kafka sends.
//   - Authorization: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED
//     (refused groups first).

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/cluster"
)

func init() { register(15, 0, 6, handleDescribeGroups) }

func handleDescribeGroups(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	// Refused groups come first, as KafkaApis.handleDescribeGroupsRequest
	// adds them before the coordinator's answers.
	var described []kmsg.DescribeGroupsResponseGroup
	defer func() { resp.Groups = append(resp.Groups, described...) }()
	for _, id := range req.Groups {
		if !r.authorized(acl.OpDescribe, acl.ResourceGroup, id) {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.AuthorizedOperations = id, math.MinInt32
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
		}
	}
	for _, id := range req.Groups {
		if !r.authorizedQuietly(acl.OpDescribe, acl.ResourceGroup, id) {
			continue
		}
		if err := b.notCoordinator(r.conn, cluster.Group, id); err != nil {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.AuthorizedOperations = id, math.MinInt32
			g.ErrorCode = codeFor(err)
			if req.Version >= 6 {
				g.ErrorMessage = errMessage(err)
			}
			described = append(described, g)
			continue
		}
		d := b.classicGroups.Describe(id)
		g := kmsg.NewDescribeGroupsResponseGroup()
		g.Group, g.State, g.ProtocolType, g.Protocol = id, string(d.State), d.ProtocolType, d.Protocol
		g.AuthorizedOperations = math.MinInt32
		if req.IncludeAuthorizedOperations {
			g.AuthorizedOperations = r.authorizedOperations(acl.ResourceGroup, id)
		}
		if d.Err != nil {
			if req.Version >= 6 {
				g.ErrorCode, g.ErrorMessage = codeFor(d.Err), errMessage(d.Err)
			}
			described = append(described, g)
			continue
		}
		for _, m := range d.Members {
			gm := kmsg.NewDescribeGroupsResponseGroupMember()
			gm.MemberID, gm.InstanceID, gm.ClientID, gm.ClientHost = m.MemberID, m.InstanceID, m.ClientID, m.ClientHost
			gm.ProtocolMetadata, gm.MemberAssignment = m.Metadata, m.Assignment
			g.Members = append(g.Members, gm)
		}
		described = append(described, g)
	}
	return resp, nil
}
