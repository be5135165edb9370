package broker

// OffsetCommit (key 8), v0-v10.
//
//   - Checks and storage are the group package's (groups.md commit-checks,
//     commit-simple, commit-stored): a member commits with its generation;
//     generation -1 with no member ID is a "simple" commit, accepted for a
//     group without members and creating it if needed.
//   - A group-level error is answered on every partition. Per partition:
//     UNKNOWN_TOPIC_OR_PARTITION, OFFSET_METADATA_TOO_LARGE.
//   - v0 has no generation or member ID (a simple commit). v1 lets each
//     partition carry its commit timestamp; v2-v4 a retention time that
//     sets the offsets' expiry. v6+ stores the leader epoch (-1 before).
//     v7+ carries the group instance ID.
//   - v9+: a generation for a group that does not exist answers
//     GROUP_ID_NOT_FOUND (before, ILLEGAL_GENERATION), as Kafka 4 does.
//   - v10 names topics by ID; an unknown ID answers UNKNOWN_TOPIC_ID.
//   - A share group's ID answers GROUP_ID_NOT_FOUND (one-kind).
//   - A KIP-848 consumer group's commit carries the member epoch in the
//     generation field: any other epoch answers STALE_MEMBER_EPOCH, an
//     unknown member UNKNOWN_MEMBER_ID, and a
//     member committing below v9 UNSUPPORTED_VERSION (groups.md
//     commit-checks). An admin commit (no member, epoch -1) is accepted
//     while the group has no members.
//   - Authorization (docs/security.md api-authorization): READ on the group
//     (else every partition GROUP_AUTHORIZATION_FAILED), then READ on each
//     topic (else its partitions TOPIC_AUTHORIZATION_FAILED).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/cluster"

	"github.com/sharebroker/sharebroker/group"
)

func init() { register(8, 0, 10, handleOffsetCommit) }

func handleOffsetCommit(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	now := b.clock.Now()
	in := group.CommitInput{
		GroupID:                req.Group,
		MemberID:               req.MemberID,
		InstanceID:             req.InstanceID,
		Generation:             req.Generation,
		UnknownGroupIsNotFound: req.Version >= 9,
	}
	if req.Version == 0 {
		in.Generation, in.MemberID = -1, ""
	}
	// READ on the group first: without it every partition answers
	// GROUP_AUTHORIZATION_FAILED and nothing else is looked at.
	groupDenied := !r.authorized(acl.OpRead, acl.ResourceGroup, req.Group)
	// v10 names topics by ID.
	var topicErr []error
	in.Topics, topicErr = b.commitTopics(r, groupDenied, req.Version >= 10, len(req.Topics),
		func(i int) (string, [16]byte) { return req.Topics[i].Topic, req.Topics[i].TopicID },
		func(i int) (cps []group.CommitPartition) {
			for _, rp := range req.Topics[i].Partitions {
				cp := group.CommitPartition{Partition: rp.Partition, Offset: rp.Offset, LeaderEpoch: rp.LeaderEpoch, Metadata: rp.Metadata}
				if req.Version < 6 {
					cp.LeaderEpoch = -1
				}
				if req.Version == 1 && rp.Timestamp != -1 {
					cp.CommitTime = time.UnixMilli(rp.Timestamp)
				}
				if req.Version >= 2 && req.Version <= 4 && req.RetentionTimeMillis != -1 {
					cp.ExpireAt = now.Add(time.Duration(req.RetentionTimeMillis) * time.Millisecond)
				}
				cps = append(cps, cp)
			}
			return cps
		})
	var errs [][]error
	groupErr := b.notCoordinator(r.conn, cluster.Group, req.Group)
	if groupDenied {
		groupErr = errGroupAuthorization
	}
	if groupErr == nil {
		if t, _ := b.groupRegistry.TypeOf(in.GroupID); t == group.TypeConsumer {
			errs, groupErr = b.consumerGroups.Commit(in, req.Version)
		} else {
			errs, groupErr = b.classicGroups.Commit(in)
		}
	}
	answers := commitAnswers(topicErr, groupErr, errs, func(i int) int { return len(req.Topics[i].Partitions) })
	for i, rt := range req.Topics {
		t := kmsg.NewOffsetCommitResponseTopic()
		t.Topic, t.TopicID = rt.Topic, rt.TopicID
		for j, rp := range rt.Partitions {
			p := kmsg.NewOffsetCommitResponseTopicPartition()
			p.Partition, p.ErrorCode = rp.Partition, codeFor(answers[i][j])
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp, nil
}
