package broker

// JoinGroup (key 11), v0-v9.
//
//   - Classic group membership is the group package's (groups.md "Classic
//     groups"); this handler translates and waits. The answer comes when the
//     round completes: every member rejoined, the rebalance timeout passed,
//     or the initial delay of a new group ended, all on the broker clock.
//     The connection waits meanwhile, as Kafka mutes it.
//   - v0 has no rebalance timeout: the session timeout serves as both.
//   - v4+: a new member without a group instance ID answers
//     MEMBER_ID_REQUIRED with its member ID (<client.id>-<uuid>).
//   - v5+: a group instance ID makes the member static (KIP-345).
//   - v7+ names the protocol type in the answer; v9+ tells a static leader
//     that rejoined a Stable group to skip the assignment (KIP-814). Before
//     v9 such a leader gets no member list, so it does not assign.
//   - A KIP-848 group without members becomes a classic group, offsets
//     included (groups.md empty-downgrade); one with members answers
//     INCONSISTENT_GROUP_PROTOCOL (classic-join-not-served).
//   - Errors: INVALID_GROUP_ID, INVALID_SESSION_TIMEOUT,
//     INCONSISTENT_GROUP_PROTOCOL (also for a share group's ID),
//     UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED,
//     MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS.
//   - Authorization (docs/security.md api-authorization): READ on the group,
//     else GROUP_AUTHORIZATION_FAILED with no member and generation -1.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/cluster"

	"github.com/sharebroker/sharebroker/group"
)

func init() { register(11, 0, 9, handleJoinGroup) }

func handleJoinGroup(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.JoinGroupRequest)
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	in := group.ClassicJoinInput{
		GroupID:              req.Group,
		MemberID:             req.MemberID,
		InstanceID:           req.InstanceID,
		ClientID:             r.header.ClientID,
		ClientHost:           r.conn.clientHost(),
		SessionTimeout:       time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		RebalanceTimeout:     time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
		ProtocolType:         req.ProtocolType,
		RequireKnownMemberID: req.Version >= 4,
	}
	if req.Version == 0 {
		in.RebalanceTimeout = in.SessionTimeout
	}
	for _, p := range req.Protocols {
		in.Protocols = append(in.Protocols, group.ClassicProtocol{Name: p.Name, Metadata: p.Metadata})
	}
	if !r.authorized(acl.OpRead, acl.ResourceGroup, req.Group) {
		// JoinGroupRequest.getErrorResponse: no member, generation -1.
		resp.MemberID, resp.LeaderID, resp.Generation = "", "", -1
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		if req.Version >= 7 {
			resp.Protocol = nil
		} else {
			resp.Protocol = kmsg.StringPtr("")
		}
		return resp, nil
	}
	if err := b.notCoordinator(r.conn, cluster.Group, req.Group); err != nil {
		resp.MemberID, resp.ErrorCode = req.MemberID, codeFor(err)
		return resp, nil
	}
	out, err := awaitGroup(b, b.classicGroups.Join(in))
	if err != nil {
		return nil, err
	}
	resp.MemberID, resp.Generation = out.MemberID, out.Generation
	if out.Err != nil {
		resp.ErrorCode = codeFor(out.Err)
		return resp, nil
	}
	protocolType, protocol := out.ProtocolType, out.Protocol
	resp.ProtocolType, resp.Protocol = &protocolType, &protocol
	resp.LeaderID = out.LeaderID
	resp.SkipAssignment = out.SkipAssignment
	if out.SkipAssignment && req.Version < 9 {
		return resp, nil
	}
	for _, m := range out.Members {
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID, jm.InstanceID, jm.ProtocolMetadata = m.MemberID, m.InstanceID, m.Metadata
		resp.Members = append(resp.Members, jm)
	}
	return resp, nil
}
