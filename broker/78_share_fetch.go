package broker

// ShareFetch (key 78), v1-v2 (v0 is not advertised, as in Kafka 4.1+).
//
// Processing follows share-groups.md §2.3:
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
//     request, so a change applies from the next request.
//   - Nothing acquired and no error: the request waits up to MaxWaitMs on
//     the broker clock, woken by appends to a session partition's log and
//     by records becoming acquirable (acknowledgement, release, lock
//     expiry), and tries again. Once anything is acquired it answers:
//     acquired records are locked and must go out now, so MinBytes is
//     treated as met (Kafka waits on available log bytes before acquiring).
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
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/shareserve"
	"github.com/sharebroker/sharebroker/storage"
)

func init() { register(78, 1, 2, handleShareFetch) }

// errShareTopicAuthorization refuses a share partition of a topic the
// principal may not READ: the code without a message, as Kafka's
// ShareFetchResponse.partitionResponse and ShareAcknowledgeResponse's.
var errShareTopicAuthorization = codeOnly{errTopicAuthorization}

// shareTopicsDenied is, with authorization on, the topic IDs among the
// named and session partitions the principal may not READ (each counted
// once); nil with it off. A topic ID that names no topic is answered
// UNKNOWN_TOPIC_ID elsewhere, not refused here.
func (r *request) shareTopicsDenied(named []shareserve.TopicPartition, parts []shareserve.SessionPartition) map[[16]byte]bool {
	if r.conn.b.authz == nil {
		return nil
	}
	denied := make(map[[16]byte]bool)
	seen := make(map[[16]byte]bool)
	check := func(id [16]byte) {
		if seen[id] {
			return
		}
		seen[id] = true
		if t := r.conn.b.store.TopicByID(id); t != nil && !r.authorized(acl.OpRead, acl.ResourceTopic, t.Name) {
			denied[id] = true
		}
	}
	for _, tp := range named {
		check(tp.TopicID)
	}
	for _, sp := range parts {
		check(sp.TopicID)
	}
	return denied
}

func handleShareFetch(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ShareFetchRequest)
	resp := &shareFetchResponse{ShareFetchResponse: *req.ResponseKind().(*kmsg.ShareFetchResponse)}
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
	key := shareserve.SessionKey{Group: *req.GroupID, Member: *req.MemberID, Node: r.conn.node()}

	var named []shareserve.TopicPartition
	hasAcks := false
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			named = append(named, shareserve.TopicPartition{TopicID: rt.TopicID, Partition: rp.Partition})
			hasAcks = hasAcks || len(rp.AcknowledgementBatches) > 0
		}
	}
	var parts []shareserve.SessionPartition
	var err error
	switch epoch := req.ShareSessionEpoch; {
	case epoch == 0:
		if hasAcks {
			return fail(fmt.Errorf("%w: a request that opens a share session (epoch 0) cannot carry acknowledgements", errInvalidRequest))
		}
		if parts, err = b.shares.Sessions.Open(key, r.conn, named); err != nil {
			b.waitOnClock(time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond)
			return fail(err)
		}
	case epoch == -1:
		err = b.shares.Sessions.Exists(key)
	default:
		var forgotten []shareserve.TopicPartition
		for _, ft := range req.ForgottenTopicsData {
			for _, p := range ft.Partitions {
				forgotten = append(forgotten, shareserve.TopicPartition{TopicID: ft.TopicID, Partition: p})
			}
		}
		parts, err = b.shares.Sessions.Advance(key, epoch, named, forgotten)
	}
	if err != nil {
		return fail(err)
	}

	// READ on each topic of the session, checked on every request as
	// Kafka does; a refused partition answers TOPIC_AUTHORIZATION_FAILED,
	// and so do its acknowledgements.
	denied := r.shareTopicsDenied(named, parts)
	cfg := b.groupConfigs.Share(key.Group) // once for the whole request
	resp.AcquisitionLockTimeoutMillis = int32(cfg.RecordLockDuration.Milliseconds())
	f := b.shares.NewFetch(key, cfg)
	f.ReadInto(&r.conn.readBuf)
	led := newShareLeadership(b, r.conn)
	now := b.clock.Now()
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			if len(rp.AcknowledgementBatches) > 0 {
				tp := shareserve.TopicPartition{TopicID: rt.TopicID, Partition: rp.Partition}
				if denied[tp.TopicID] {
					f.Refuse(tp, errShareTopicAuthorization)
				} else if err := led.check(tp); err != nil {
					f.Refuse(tp, err) // and shareserve refuses its acknowledgements
				}
				f.Acknowledge(tp, req.Version, req.IsRenewAck, fetchAckBatches(rp.AcknowledgementBatches), now)
			}
		}
	}

	b.countShareFetchAcks(key.Node, f.Acked(), f)
	switch {
	case req.ShareSessionEpoch == -1:
		writeShareFetchAnswers(resp, f.Acked(), f, led)
		b.shares.CloseSession(key, b.clock.Now())
		return resp, nil
	case req.IsRenewAck:
		writeShareFetchAnswers(resp, f.Acked(), f, led)
		return resp, nil
	}

	// Partitions another node leads answer NOT_LEADER_OR_FOLLOWER and are
	// not acquired from; the request then answers without waiting.
	// Partitions of refused topics are answered the same way.
	ours := parts
	if b.cfg.Nodes > 1 || denied != nil {
		ours = make([]shareserve.SessionPartition, 0, len(parts))
		for _, sp := range parts {
			var err error
			if denied[sp.TopicID] {
				err = errShareTopicAuthorization
			} else if b.cfg.Nodes > 1 {
				err = led.check(sp.TopicPartition)
			}
			if err != nil {
				if f.Answer(sp.TopicPartition) == nil {
					f.Refuse(sp.TopicPartition, err)
				}
				continue
			}
			ours = append(ours, sp)
		}
		if b.cfg.Nodes > 1 {
			f.CheckLeader(led.check) // a leader may move while the request waits
		}
	}
	if f.Plan(ours, req.ShareSessionEpoch, b.shareFetchLimits(req, mode)) {
		deadline := b.clock.Now().Add(time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond)
		if f.Refused() {
			deadline = b.clock.Now()
		}
		// A leader that moves while the request waits wakes it, and the
		// next attempt refuses the partition (CheckLeader above).
		b.longPoll(deadline, f.Attempt, b.metrics.waitsOf(key.Node))
		b.countShareFetch(key.Node, parts, f)
	}
	writeShareFetchAnswers(resp, f.Listed(req.ShareSessionEpoch, parts), f, led)
	return resp, nil
}

// shareFetchLimits is what the request may acquire: MaxRecords, and
// MaxBytes capped by fetch.max.bytes (a negative MaxBytes means only the
// cap; zero, nothing).
func (b *Broker) shareFetchLimits(req *kmsg.ShareFetchRequest, mode sharepartition.AcquireMode) shareserve.Limits {
	maxBytes := int64(b.cfg.props.int32("fetch.max.bytes"))
	switch {
	case req.MaxBytes == 0:
		maxBytes = 0
	case req.MaxBytes > 0:
		maxBytes = min(maxBytes, int64(req.MaxBytes))
	}
	return shareserve.Limits{MaxRecords: req.MaxRecords, MaxBytes: maxBytes, BatchSize: req.BatchSize, Mode: mode}
}

// writeShareFetchAnswers lists the partitions in order, grouped by topic;
// a partition another node leads names its leader, and the answer that
// leader's endpoint (KIP-951).
func writeShareFetchAnswers(resp *shareFetchResponse, listed []shareserve.TopicPartition, f *shareserve.Fetch, led *shareLeadership) {
	topicIndex := make(map[storage.TopicID]int)
	for _, tp := range listed {
		i, ok := topicIndex[tp.TopicID]
		if !ok {
			t := kmsg.NewShareFetchResponseTopic()
			t.TopicID = tp.TopicID
			resp.Topics = append(resp.Topics, t)
			i = len(resp.Topics) - 1
			topicIndex[tp.TopicID] = i
		}
		p := kmsg.NewShareFetchResponseTopicPartition()
		p.Partition = tp.Partition
		if l, ok := led.refused[tp]; ok {
			p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = l.Leader, l.Epoch
		}
		if a := f.Answer(tp); a != nil {
			p.ErrorCode, p.ErrorMessage = codeFor(a.Err), errMessage(a.Err)
			p.AcknowledgeErrorCode, p.AcknowledgeErrorMessage = codeFor(a.AckErr), errMessage(a.AckErr)
			if a.HasData() {
				p.Records = resp.field(i, len(resp.Topics[i].Partitions), a.Records)
				for _, rg := range a.Ranges {
					ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
					ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = rg.FirstOffset, rg.LastOffset, rg.DeliveryCount
					p.AcquiredRecords = append(p.AcquiredRecords, ar)
				}
			}
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
	}
	led.endpoints.each(func(node int32, ep endpoint) {
		ne := kmsg.NewShareFetchResponseNodeEndpoint()
		ne.NodeID, ne.Host, ne.Port = node, ep.host, ep.port
		resp.NodeEndpoints = append(resp.NodeEndpoints, ne)
	})
}

// waitOnClock waits d on the broker clock, or until the broker closes.
func (b *Broker) waitOnClock(d time.Duration) {
	if d <= 0 {
		return
	}
	fired := make(chan struct{})
	t := b.clock.AfterFunc(d, func() { close(fired) })
	select {
	case <-fired:
	case <-b.done:
		t.Stop()
	}
}
