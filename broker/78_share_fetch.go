package broker

// ShareFetch (key 78), v1-v2 (v0 is not advertised, as in Kafka 4.1+).
//
// Processing follows share-groups.md §2.3. The handler checks what the
// request says on its own (the first item below), then makes one call,
// shareserve.Service.Fetch, which does everything with state (the rest),
// and encodes its result:
//
//   - Top-level INVALID_REQUEST for a missing group ID, a member ID that is
//     empty or longer than 36 characters, a renew fetch (IsRenewAck) with a
//     non-zero MaxWaitMs, MinBytes, MaxBytes or MaxRecords, an acquire mode
//     other than 0 or 1, or acknowledgements in a request that opens a
//     session. Top-level errors carry AcquisitionLockTimeoutMs 0, as Kafka's.
//   - The share session (§2.4, shareserve.Sessions): epoch 0 opens one with
//     exactly the named partitions, -1 closes it, anything else must be the
//     expected epoch and adds the named and drops the forgotten partitions.
//     A new session beyond group.share.max.share.sessions waits MaxWaitMs
//     on the broker clock, then answers SHARE_SESSION_LIMIT_REACHED.
//   - Piggybacked acknowledgements are applied first, per partition, all or
//     nothing; their result is the partition's AcknowledgeErrorCode.
//   - Then records are acquired from every session partition
//     (shareserve.Fetch), starting at a partition that rotates with the
//     session epoch, until MaxRecords are acquired (§2.7; the share
//     partition applies the acquire mode, the in-flight limit and
//     throttling). Each partition returns exactly the stored batches that
//     hold its acquired ranges. The group's config is read once per
//     request, so a change applies from the next request. Only the
//     session's partitions that may give something are looked at
//     (share-groups.md share-fetch-ready-set); the answer is the same.
//   - Nothing acquired and no error: the request waits up to MaxWaitMs on
//     the broker clock, woken by appends to a session partition's log and
//     by records becoming acquirable (acknowledgement, release, lock
//     expiry), and tries again. Until MaxWaitMs it acquires nothing while
//     the acquirable partitions hold fewer than MinBytes of log, as Kafka's
//     DelayedShareFetch does (share-groups.md share-fetch-min-bytes); at
//     MaxWaitMs it acquires what there is.
//   - A renew fetch (IsRenewAck, v2) only acknowledges: no acquisition, no
//     wait, and the answer holds only the acknowledged partitions. A
//     closing request (-1) acknowledges, answers, then closes the session
//     and releases the member's records on its partitions (row 8).
//   - An incremental answer (epoch > 0) lists a session partition only if it
//     has records, an error, an acknowledgement result, or was added since
//     the last answer; a full answer (epoch 0) lists every one.
//   - AcquisitionLockTimeoutMs is the group's share.record.lock.duration.ms.
//   - A top-level error has a null ErrorMessage: Kafka answers those with
//     ShareFetchRequest.getErrorResponse, which sets only the code
//     (answers-as-kafka). Partition errors carry a message.
//   - A partition another node leads (not-leader) answers
//     NOT_LEADER_OR_FOLLOWER with its CurrentLeader, and the answer the
//     leader's NodeEndpoints (KIP-951); nothing is acquired from it, also
//     when its leader moves away while the request waits. Its
//     acknowledgements answer UNKNOWN_TOPIC_OR_PARTITION: the node holds
//     no share partition for it (docs/cluster.md share-ack-after-move).
//     Share sessions are per node, as each Kafka broker keeps its own.
//   - With share.isolation.level=read_committed records are acquired only
//     below the last stable offset, and batches of aborted transactions
//     are archived as they are acquired (share-read-committed).
//   - Authorization (docs/security.md api-authorization): READ on the group
//     (else GROUP_AUTHORIZATION_FAILED at the top level), READ on each topic
//     of the request and the session (else its partitions and
//     acknowledgements TOPIC_AUTHORIZATION_FAILED, without a message).

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/shareserve"
	"github.com/sharebroker/sharebroker/storage"
	"github.com/sharebroker/sharebroker/wire"
)

func init() { register(78, 1, 2, handleShareFetch) }

func handleShareFetch(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ShareFetchRequest)
	resp := &wire.ShareFetchResponse{ShareFetchResponse: *req.ResponseKind().(*kmsg.ShareFetchResponse)}
	fail := func(err error) (kmsg.Response, error) {
		resp.ErrorCode = codeFor(err) // and a null ErrorMessage, as in Kafka
		return resp, nil
	}
	if req.GroupID != nil && !r.authorized(acl.OpRead, acl.ResourceGroup, *req.GroupID) {
		return fail(errGroupAuthorization)
	}
	if err := validateShareIDs(req.GroupID, req.MemberID); err != nil {
		return fail(err)
	}
	if err := validateRenewFetch(req); err != nil {
		return fail(err)
	}
	mode := sharepartition.AcquireMode(req.ShareAcquireMode)
	if mode != sharepartition.BatchOptimized && mode != sharepartition.RecordLimit {
		return fail(fmt.Errorf("%w: ShareAcquireMode %d is neither 0 (batch optimized) nor 1 (record limit)", errInvalidRequest, req.ShareAcquireMode))
	}
	named := 0
	for _, rt := range req.Topics {
		named += len(rt.Partitions)
	}
	parts := make([]shareserve.PartitionAcks, 0, named) // a session opens with thousands
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			p := shareserve.PartitionAcks{TopicPartition: shareserve.TopicPartition{TopicID: rt.TopicID, Partition: rp.Partition}}
			if len(rp.AcknowledgementBatches) > 0 {
				if req.ShareSessionEpoch == 0 {
					return fail(fmt.Errorf("%w: a request that opens a share session (epoch 0) cannot carry acknowledgements", errInvalidRequest))
				}
				p.Acks = fetchAckBatches(rp.AcknowledgementBatches)
			}
			parts = append(parts, p)
		}
	}
	var forgotten []shareserve.TopicPartition
	for _, ft := range req.ForgottenTopicsData {
		for _, p := range ft.Partitions {
			forgotten = append(forgotten, shareserve.TopicPartition{TopicID: ft.TopicID, Partition: p})
		}
	}
	node := r.conn.node()
	res := b.shareServing.Fetch(b.serveCtx, shareserve.FetchRequest{
		Key:           shareserve.SessionKey{Group: *req.GroupID, Member: *req.MemberID, Node: node},
		Owner:         r.conn,
		Requester:     r,
		Epoch:         req.ShareSessionEpoch,
		Version:       req.Version,
		IsRenewAck:    req.IsRenewAck,
		Partitions:    parts,
		Forgotten:     forgotten,
		MaxWait:       time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond,
		MinBytes:      req.MinBytes,
		MaxRecords:    req.MaxRecords,
		BatchSize:     req.BatchSize,
		Mode:          mode,
		MaxBytes:      req.MaxBytes,
		FetchMaxBytes: b.cfg.props.Int32("fetch.max.bytes"),
		ReadBuf:       &r.conn.readBuf,
		Parked:        b.metrics.WaitsOf(node).Parked(),
	})
	if res.Err != nil {
		return fail(res.Err)
	}
	b.countShareFetch(node, res)
	resp.AcquisitionLockTimeoutMillis = int32(res.LockDuration.Milliseconds())
	writeShareFetchAnswers(resp, res.Partitions, leaderEndpoints{b: b, index: r.conn.listenerIndex()})
	return resp, nil
}

// writeShareFetchAnswers lists the partitions in order, grouped by topic;
// a partition another node leads names its leader, and the answer that
// leader's endpoint (KIP-951).
func writeShareFetchAnswers(resp *wire.ShareFetchResponse, listed []shareserve.PartitionAnswer, leaders leaderEndpoints) {
	// Topics in order of first appearance, each sized for its partitions
	// first: appending a few hundred-byte entries one by one regrew the
	// slices on every fetch.
	topicIndex := make(map[storage.TopicID]int)
	var counts []int
	for k := range listed {
		i, ok := topicIndex[listed[k].TopicID]
		if !ok {
			i = len(counts)
			topicIndex[listed[k].TopicID] = i
			counts = append(counts, 0)
		}
		counts[i]++
	}
	base := len(resp.Topics)
	resp.Topics = slices.Grow(resp.Topics, len(counts))
	for k := range listed {
		a := &listed[k]
		n := topicIndex[a.TopicID]
		i := base + n
		if i == len(resp.Topics) {
			t := kmsg.NewShareFetchResponseTopic()
			t.TopicID = a.TopicID
			t.Partitions = make([]kmsg.ShareFetchResponseTopicPartition, 0, counts[n])
			resp.Topics = append(resp.Topics, t)
		}
		p := kmsg.NewShareFetchResponseTopicPartition()
		p.Partition = a.Partition
		if a.Err != nil {
			// nl is declared here: it escapes to errors.As, and one per
			// listed partition was a heap object per answer entry.
			var nl shareNotLeader
			if errors.As(a.Err, &nl) {
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = nl.leader.Leader, nl.leader.Epoch
				leaders.add(nl.leader.Leader)
			}
		}
		p.ErrorCode, p.ErrorMessage = codeFor(a.Err), errMessage(a.Err)
		p.AcknowledgeErrorCode, p.AcknowledgeErrorMessage = codeFor(a.AckErr), errMessage(a.AckErr)
		if a.HasData() {
			p.Records = resp.Field(i, len(resp.Topics[i].Partitions), a.Records)
			for _, rg := range a.Ranges {
				ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
				ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = rg.FirstOffset, rg.LastOffset, rg.DeliveryCount
				p.AcquiredRecords = append(p.AcquiredRecords, ar)
			}
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
	}
	leaders.each(func(node int32, ep endpoint) {
		ne := kmsg.NewShareFetchResponseNodeEndpoint()
		ne.NodeID, ne.Host, ne.Port = node, ep.host, ep.port
		resp.NodeEndpoints = append(resp.NodeEndpoints, ne)
	})
}
