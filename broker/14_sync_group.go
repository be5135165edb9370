package broker

// SyncGroup (key 14), v0-v5.
//
//   - The leader's SyncGroup stores the assignment and answers every
//     member's waiting SyncGroup with its own part; a follower's waits for
//     the leader's (groups.md sync), bounded by the rebalance timeout after
//     the round, when members that did not sync are removed.
//   - v3+ carries the group instance ID; v5+ the protocol type and name,
//     checked against the group's and echoed in the answer.
//   - Errors: INVALID_GROUP_ID, UNKNOWN_MEMBER_ID (also for an unknown
//     group), FENCED_INSTANCE_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS,
//     INCONSISTENT_GROUP_PROTOCOL.
//   - Authorization (docs/security.md api-authorization): READ on the group,
//     else GROUP_AUTHORIZATION_FAILED.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"

	"github.com/sharebroker/sharebroker/group"
)

func init() { register(14, 0, 5, handleSyncGroup) }

func handleSyncGroup(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.SyncGroupRequest)
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	in := group.ClassicSyncInput{
		GroupID:      req.Group,
		MemberID:     req.MemberID,
		InstanceID:   req.InstanceID,
		Generation:   req.Generation,
		ProtocolType: req.ProtocolType,
		Protocol:     req.Protocol,
	}
	if len(req.GroupAssignment) > 0 {
		in.Assignments = make(map[string][]byte, len(req.GroupAssignment))
		for _, a := range req.GroupAssignment {
			in.Assignments[a.MemberID] = a.MemberAssignment
		}
	}
	if err := b.groupGate(r, acl.OpRead, req.Group); err != nil {
		resp.ErrorCode = codeFor(err)
		return resp, nil
	}
	out, err := awaitGroup(b, b.classicGroups.Sync(in))
	if err != nil {
		return nil, err
	}
	if out.Err != nil {
		resp.ErrorCode = codeFor(out.Err)
		return resp, nil
	}
	protocolType, protocol := out.ProtocolType, out.Protocol
	resp.ProtocolType, resp.Protocol = &protocolType, &protocol
	resp.MemberAssignment = out.Assignment
	return resp, nil
}
