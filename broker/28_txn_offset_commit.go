package broker

// TxnOffsetCommit (key 28), v0-v6.
//
//   - Stores the offsets as pending for the transaction; EndTxn applies or
//     drops them (txn-offset-commit). The group must have been added with
//     AddOffsetsToTxn, else INVALID_TXN_STATE for every partition.
//   - The producer is checked first: INVALID_PRODUCER_ID_MAPPING,
//     PRODUCER_FENCED (v3+; INVALID_PRODUCER_EPOCH before),
//     CONCURRENT_TRANSACTIONS.
//   - v3+ (KIP-447) GenerationId, MemberId and GroupInstanceId are checked
//     against the group as OffsetCommit checks them: UNKNOWN_MEMBER_ID,
//     ILLEGAL_GENERATION, FENCED_INSTANCE_ID; for a KIP-848 group the
//     generation is the member epoch and a wrong one is ILLEGAL_GENERATION
//     too (the API has no STALE_MEMBER_EPOCH). A rejected commit stores
//     nothing. Generation -1 with no member is not checked; a generation
//     for a group that does not exist is ILLEGAL_GENERATION.
//   - Unknown topics or partitions are UNKNOWN_TOPIC_OR_PARTITION, metadata
//     above offset.metadata.max.bytes OFFSET_METADATA_TOO_LARGE, per
//     partition.
//   - v5+ under transaction.version 2 (KIP-890 part 2) adds the group to
//     the transaction itself, starting one if none is ongoing, so no
//     AddOffsetsToTxn is needed (txn-offset-commit-implicit). Below level
//     2 it follows the rules above.
//   - v6 names topics by ID; an unknown ID answers UNKNOWN_TOPIC_ID. v6
//     (KIP-1319) also answers the group's own errors: GROUP_ID_NOT_FOUND
//     for a generation to a group that does not exist and
//     STALE_MEMBER_EPOCH for a KIP-848 member's other epoch, where v0-v5
//     answer ILLEGAL_GENERATION for both (txn-offset-commit-v6).
//   - Authorization (docs/security.md api-authorization): WRITE on the
//     transactional ID, READ on the group (else every partition their
//     refusal), READ on each topic (else TOPIC_AUTHORIZATION_FAILED).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/cluster"

	"github.com/sharebroker/sharebroker/group"
)

func init() { register(28, 0, 6, handleTxnOffsetCommit) }

func handleTxnOffsetCommit(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)

	in := group.TxnCommitInput{ProducerID: req.ProducerID}
	in.GroupID, in.Generation = req.Group, -1
	if req.Version >= 3 {
		in.Generation, in.MemberID, in.InstanceID = req.Generation, req.MemberID, req.InstanceID
	}
	in.UnknownGroupIsNotFound, in.StaleEpochIsStale = req.Version >= 6, req.Version >= 6
	// WRITE on the transactional ID, then READ on the group: without
	// either every partition answers its refusal (TxnOffsetCommitRequest's
	// getErrorResponse), before anything else is looked at.
	var denied error
	switch {
	case !r.authorized(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID):
		denied = errTransactionalIDAuthorization
	case !r.authorized(acl.OpRead, acl.ResourceGroup, req.Group):
		denied = errGroupAuthorization
	}
	// v6 names topics by ID.
	var topicErr []error
	in.Topics, topicErr = b.commitTopics(r, denied != nil, req.Version >= 6, len(req.Topics),
		func(i int) (string, [16]byte) { return req.Topics[i].Topic, req.Topics[i].TopicID },
		func(i int) (cps []group.CommitPartition) {
			for _, rp := range req.Topics[i].Partitions {
				leaderEpoch := int32(-1)
				if req.Version >= 2 {
					leaderEpoch = rp.LeaderEpoch
				}
				cps = append(cps, group.CommitPartition{
					Partition: rp.Partition, Offset: rp.Offset, LeaderEpoch: leaderEpoch, Metadata: rp.Metadata,
				})
			}
			return cps
		})

	var errs [][]error
	add := req.Version >= 5 && b.txnVersion2()
	err := b.notCoordinator(r.conn, cluster.Group, req.Group)
	if denied != nil {
		err = denied
	}
	if err == nil {
		err = b.txns.CheckOffsetCommit(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group, add)
	}
	if err == nil {
		if t, _ := b.groupRegistry.TypeOf(in.GroupID); t == group.TypeConsumer {
			errs, err = b.consumerGroups.TxnCommit(in)
		} else {
			errs, err = b.classicGroups.TxnCommit(in)
		}
	}
	// Only the producer's checks answer PRODUCER_FENCED, so txnCode reads
	// every partition's error as codeFor does but for them.
	answers := commitAnswers(topicErr, err, errs, func(i int) int { return len(req.Topics[i].Partitions) })
	for i, rt := range req.Topics {
		st := kmsg.NewTxnOffsetCommitResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for j, rp := range rt.Partitions {
			sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, txnCode(answers[i][j], req.Version, 3)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
