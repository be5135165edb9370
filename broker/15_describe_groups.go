package broker

// DescribeGroups (key 15), v0-v6.
//
//   - Describes classic groups (groups.md describe): state, protocol type,
//     protocol, and members with client ID, host, and, in Stable and
//     CompletingRebalance, metadata and assignment.
//   - A group that does not exist, or an ID of another kind of group, is
//     Dead with no members; from v6 it also answers GROUP_ID_NOT_FOUND
//     (KIP-1043). Share groups are described by ShareGroupDescribe.
//   - IncludeAuthorizedOperations (v3+): there are no ACLs, so every group
//     operation is allowed.

import (
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/cluster"
)

func init() { register(15, 0, 6, handleDescribeGroups) }

func handleDescribeGroups(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		if err := b.notCoordinator(r.conn, cluster.Group, id); err != nil {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.AuthorizedOperations = id, math.MinInt32
			g.ErrorCode = codeFor(err)
			if req.Version >= 6 {
				g.ErrorMessage = errMessage(err)
			}
			resp.Groups = append(resp.Groups, g)
			continue
		}
		d := b.classicGroups.Describe(id)
		g := kmsg.NewDescribeGroupsResponseGroup()
		g.Group, g.State, g.ProtocolType, g.Protocol = id, string(d.State), d.ProtocolType, d.Protocol
		g.AuthorizedOperations = math.MinInt32
		if req.IncludeAuthorizedOperations {
			g.AuthorizedOperations = allGroupOperations
		}
		if d.Err != nil {
			if req.Version >= 6 {
				g.ErrorCode, g.ErrorMessage = codeFor(d.Err), errMessage(d.Err)
			}
			resp.Groups = append(resp.Groups, g)
			continue
		}
		for _, m := range d.Members {
			gm := kmsg.NewDescribeGroupsResponseGroupMember()
			gm.MemberID, gm.InstanceID, gm.ClientID, gm.ClientHost = m.MemberID, m.InstanceID, m.ClientID, m.ClientHost
			gm.ProtocolMetadata, gm.MemberAssignment = m.Metadata, m.Assignment
			g.Members = append(g.Members, gm)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
