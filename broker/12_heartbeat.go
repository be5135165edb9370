package broker

// Heartbeat (key 12), v0-v4: a classic group member's keep-alive.
//
//   - The current generation keeps the member's session (groups.md
//     heartbeat); during a rebalance the answer is REBALANCE_IN_PROGRESS so
//     the member rejoins.
//   - v3+ carries the group instance ID (FENCED_INSTANCE_ID when another
//     member ID owns it).
//   - Errors: INVALID_GROUP_ID, UNKNOWN_MEMBER_ID (also for an unknown
//     group), FENCED_INSTANCE_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS.
//   - Authorization (docs/security.md api-authorization): READ on the group,
//     else GROUP_AUTHORIZATION_FAILED.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"

	"github.com/sharebroker/sharebroker/group"
)

func init() { register(12, 0, 4, handleHeartbeat) }

func handleHeartbeat(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if err := b.groupGate(r, acl.OpRead, req.Group); err != nil {
		resp.ErrorCode = codeFor(err)
		return resp, nil
	}
	err := b.classicGroups.Heartbeat(group.ClassicHeartbeatInput{
		GroupID:    req.Group,
		MemberID:   req.MemberID,
		InstanceID: req.InstanceID,
		Generation: req.Generation,
	})
	resp.ErrorCode = codeFor(err)
	return resp, nil
}
