package broker

// LeaveGroup (key 13), v0-v5.
//
//   - v0-v2 remove one member by member ID; v3+ a batch, each member by
//     member ID and/or group instance ID (an instance ID alone removes the
//     static member that holds it), each with its own error. The group then
//     rebalances once; the last member leaving makes it Empty (groups.md
//     leave, static-leave).
//   - A group that does not exist answers UNKNOWN_MEMBER_ID for the
//     request; an empty group ID INVALID_GROUP_ID.
//   - v5+ members carry a reason, which is only logged by Kafka; it is
//     ignored here.
//   - Authorization (docs/security.md api-authorization): READ on the group,
//     else GROUP_AUTHORIZATION_FAILED at the top level.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"

	"github.com/sharebroker/sharebroker/group"
)

func init() { register(13, 0, 5, handleLeaveGroup) }

func handleLeaveGroup(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if err := b.groupGate(r, acl.OpRead, req.Group); err != nil {
		resp.ErrorCode = codeFor(err)
		return resp, nil
	}
	if req.Version < 3 {
		errs, err := b.classicGroups.Leave(req.Group, []group.ClassicLeavingMember{{MemberID: req.MemberID}})
		if err == nil {
			err = errs[0]
		}
		resp.ErrorCode = codeFor(err)
		return resp, nil
	}
	members := make([]group.ClassicLeavingMember, 0, len(req.Members))
	for _, m := range req.Members {
		members = append(members, group.ClassicLeavingMember{MemberID: m.MemberID, InstanceID: m.InstanceID})
	}
	errs, err := b.classicGroups.Leave(req.Group, members)
	if err != nil {
		resp.ErrorCode = codeFor(err)
		return resp, nil
	}
	for i, m := range req.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = m.MemberID, m.InstanceID, codeFor(errs[i])
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}
