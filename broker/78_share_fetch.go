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
//   - The share session (§2.4, share_sessions.go): epoch 0 opens one with
//     exactly the named partitions, -1 closes it, anything else must be the
//     expected epoch and adds the named and drops the forgotten partitions.
//     A new session beyond group.share.max.share.sessions waits MaxWaitMs
//     on the broker clock, then answers SHARE_SESSION_LIMIT_REACHED.
//   - Piggybacked acknowledgements are applied first, per partition, all or
//     nothing; their result is the partition's AcknowledgeErrorCode.
//   - Then records are acquired from every session partition, starting at a
//     partition that rotates with the session epoch, until MaxRecords are
//     acquired (§2.7; the share partition applies the acquire mode, the
//     in-flight limit and throttling). Each partition returns exactly the
//     stored batches that hold its acquired ranges.
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
//   - With share.isolation.level=read_committed records are acquired only
//     below the last stable offset, and batches of aborted transactions
//     are archived as they are acquired (share-read-committed).

import (
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/storage"
)

func init() { register(78, 1, 2, handleShareFetch) }

// partitionAnswer is what one partition of a ShareFetch answers.
type partitionAnswer struct {
	tp      topicPartition
	err     error // fetch error
	ackErr  error
	acked   bool // carried acknowledgements
	records storage.Records
	ranges  []sharepartition.AcquiredRange
}

func (a *partitionAnswer) hasData() bool { return len(a.ranges) > 0 }

func handleShareFetch(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ShareFetchRequest)
	resp := &shareFetchResponse{ShareFetchResponse: *req.ResponseKind().(*kmsg.ShareFetchResponse)}
	fail := func(err error) (kmsg.Response, error) {
		resp.ErrorCode = codeFor(err) // and a null ErrorMessage, as in Kafka
		return resp, nil
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
	key := shareSessionKey{group: *req.GroupID, member: *req.MemberID}

	var named []topicPartition
	hasAcks := false
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			named = append(named, topicPartition{topicID: rt.TopicID, partition: rp.Partition})
			hasAcks = hasAcks || len(rp.AcknowledgementBatches) > 0
		}
	}
	var parts []sessionPartition
	var err error
	switch epoch := req.ShareSessionEpoch; {
	case epoch == 0:
		if hasAcks {
			return fail(fmt.Errorf("%w: a request that opens a share session (epoch 0) cannot carry acknowledgements", errInvalidRequest))
		}
		if parts, err = b.shareSessions.open(key, r.conn, named); err != nil {
			b.waitOnClock(time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond)
			return fail(err)
		}
	case epoch == -1:
		err = b.shareSessions.exists(key)
	default:
		var forgotten []topicPartition
		for _, ft := range req.ForgottenTopicsData {
			for _, p := range ft.Partitions {
				forgotten = append(forgotten, topicPartition{topicID: ft.TopicID, partition: p})
			}
		}
		parts, err = b.shareSessions.advance(key, epoch, named, forgotten)
	}
	if err != nil {
		return fail(err)
	}

	cfg := b.groupConfigs.Share(key.group)
	resp.AcquisitionLockTimeoutMillis = int32(cfg.RecordLockDuration.Milliseconds())
	now := b.clock.Now()
	answers := make(map[topicPartition]*partitionAnswer)
	answer := func(tp topicPartition) *partitionAnswer {
		a := answers[tp]
		if a == nil {
			a = &partitionAnswer{tp: tp}
			answers[tp] = a
		}
		return a
	}
	var acked []topicPartition
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			if len(rp.AcknowledgementBatches) == 0 {
				continue
			}
			tp := topicPartition{topicID: rt.TopicID, partition: rp.Partition}
			a := answer(tp)
			a.acked = true
			a.ackErr = b.ackPartition(key.group, key.member, req.Version, req.IsRenewAck, tp, fetchAckBatches(rp.AcknowledgementBatches), now)
			acked = append(acked, tp)
		}
	}

	switch {
	case req.ShareSessionEpoch == -1:
		writeShareFetchAnswers(resp, acked, answers)
		b.releaseSession(key, b.shareSessions.close(key), b.clock.Now())
		return resp, nil
	case req.IsRenewAck:
		writeShareFetchAnswers(resp, acked, answers)
		return resp, nil
	}

	b.acquireWaiting(req, key.group, key.member, mode, parts, answer)

	// Which partitions the answer lists (§2.4 incremental filtering).
	var listed, appeared, failed []topicPartition
	for _, sp := range parts {
		a := answers[sp.topicPartition]
		include := req.ShareSessionEpoch == 0 || sp.mustAppear || (a != nil && (a.hasData() || a.err != nil || a.acked))
		if !include {
			continue
		}
		listed = append(listed, sp.topicPartition)
		appeared = append(appeared, sp.topicPartition)
		if a != nil && a.err != nil {
			failed = append(failed, sp.topicPartition)
		}
	}
	for _, tp := range acked { // acknowledged partitions always appear
		if !containsTP(listed, tp) {
			listed = append(listed, tp)
		}
	}
	writeShareFetchAnswers(resp, listed, answers)
	b.shareSessions.responded(key, appeared, failed)
	return resp, nil
}

// acquireWaiting acquires records for member from the session partitions,
// waiting up to MaxWaitMs on the broker clock while there is nothing to
// acquire and no error (see the file comment).
func (b *Broker) acquireWaiting(req *kmsg.ShareFetchRequest, groupID, member string, mode sharepartition.AcquireMode,
	parts []sessionPartition, answer func(topicPartition) *partitionAnswer,
) {
	if len(parts) == 0 || req.MaxRecords <= 0 || req.MaxBytes == 0 {
		return
	}
	// Rotate the starting partition with the epoch, so MaxRecords is not
	// always spent on the same partition first.
	start := int(uint32(req.ShareSessionEpoch) % uint32(len(parts)))
	order := append(append([]sessionPartition(nil), parts[start:]...), parts[:start]...)
	maxBytes := int64(b.cfg.props.int32("fetch.max.bytes"))
	if req.MaxBytes > 0 {
		maxBytes = min(maxBytes, int64(req.MaxBytes))
	}
	deadline := b.clock.Now().Add(time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond)

	b.longPoll(deadline, func(wake chan<- struct{}) (bool, func()) {
		var watchedLogs []*storage.Partition
		var watchedShares []*sharePart
		for _, sp := range order {
			t := b.store.TopicByID(sp.topicID)
			if t == nil {
				continue
			}
			if log := t.Partition(sp.partition); log != nil {
				p := b.sharePart(groupID, t, log)
				log.Watch(wake)
				p.waiters.watch(wake)
				watchedLogs, watchedShares = append(watchedLogs, log), append(watchedShares, p)
			}
		}
		acquired, failed := b.acquireOnce(req, groupID, member, mode, order, maxBytes, answer)
		return acquired || failed, func() {
			for _, log := range watchedLogs {
				log.Unwatch(wake)
			}
			for _, p := range watchedShares {
				p.waiters.unwatch(wake)
			}
		}
	})
}

// acquireOnce makes one pass over the partitions in order, acquiring up to
// MaxRecords in all. It reports whether anything was acquired and whether
// any partition failed.
func (b *Broker) acquireOnce(req *kmsg.ShareFetchRequest, groupID, member string, mode sharepartition.AcquireMode,
	order []sessionPartition, maxBytes int64, answer func(topicPartition) *partitionAnswer,
) (acquired, failed bool) {
	remaining := int64(req.MaxRecords)
	bytesLeft := maxBytes
	now := b.clock.Now()
	for _, sp := range order {
		a := answer(sp.topicPartition)
		t := b.store.TopicByID(sp.topicID)
		switch {
		case t == nil:
			a.err = fmt.Errorf("%w: %x", storage.ErrUnknownTopicID, sp.topicID)
		case t.Partition(sp.partition) == nil:
			a.err = fmt.Errorf("%w: %s has no partition %d", storage.ErrUnknownTopic, t.Name, sp.partition)
		}
		if a.err != nil {
			failed = true
			continue
		}
		if remaining <= 0 || bytesLeft <= 0 {
			continue
		}
		log := t.Partition(sp.partition)
		p := b.sharePart(groupID, t, log)
		if logStart := log.Offsets().LogStart; p.sp.StartOffset() < logStart {
			p.sp.LogStartMoved(logStart) // rows 9 and §1.4: archive what retention removed
		}
		if !p.sp.CanAcquire() {
			continue
		}
		next := p.sp.NextFetchOffset()
		// share-read-committed: acquire only below the last stable offset;
		// aborted transactions' batches are marked for archiving.
		end := int64(math.MaxInt64)
		if b.groupConfigs.Share(groupID).IsolationLevel == group.ReadCommitted {
			end = log.Offsets().LastStable
		}
		stored, _, err := log.Batches(next, end, int32(min(bytesLeft, math.MaxInt32)))
		if err != nil {
			// The log moved under us (retention between the two reads):
			// nothing to acquire this pass.
			continue
		}
		if len(stored) == 0 {
			continue
		}
		batches := make([]sharepartition.LogBatch, len(stored))
		for i, s := range stored {
			batches[i] = sharepartition.LogBatch{BaseOffset: s.BaseOffset, LastOffset: s.LastOffset, Control: s.Control, Aborted: s.Aborted}
		}
		ranges, err := p.sp.Acquire(sharepartition.AcquireRequest{
			Member:      member,
			FetchOffset: next,
			Batches:     batches,
			MaxRecords:  int(remaining),
			BatchSize:   int(req.BatchSize),
			Mode:        mode,
		}, now)
		if err != nil {
			a.err = err
			failed = true
			continue
		}
		if len(ranges) == 0 {
			continue
		}
		a.ranges = append(a.ranges, ranges...)
		a.records = log.ReadRange(a.ranges[0].FirstOffset, a.ranges[len(a.ranges)-1].LastOffset)
		for _, rg := range ranges {
			remaining -= rg.LastOffset - rg.FirstOffset + 1
		}
		bytesLeft -= int64(a.records.Len())
		acquired = true
	}
	return acquired, failed
}

// writeShareFetchAnswers lists the partitions in order, grouped by topic.
func writeShareFetchAnswers(resp *shareFetchResponse, listed []topicPartition, answers map[topicPartition]*partitionAnswer) {
	topicIndex := make(map[storage.TopicID]int)
	for _, tp := range listed {
		i, ok := topicIndex[tp.topicID]
		if !ok {
			t := kmsg.NewShareFetchResponseTopic()
			t.TopicID = tp.topicID
			resp.Topics = append(resp.Topics, t)
			i = len(resp.Topics) - 1
			topicIndex[tp.topicID] = i
		}
		p := kmsg.NewShareFetchResponseTopicPartition()
		p.Partition = tp.partition
		if a := answers[tp]; a != nil {
			p.ErrorCode, p.ErrorMessage = codeFor(a.err), errMessage(a.err)
			p.AcknowledgeErrorCode, p.AcknowledgeErrorMessage = codeFor(a.ackErr), errMessage(a.ackErr)
			if a.hasData() {
				p.Records = resp.field(i, len(resp.Topics[i].Partitions), a.records)
				for _, rg := range a.ranges {
					ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
					ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = rg.FirstOffset, rg.LastOffset, rg.DeliveryCount
					p.AcquiredRecords = append(p.AcquiredRecords, ar)
				}
			}
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
	}
}

func containsTP(tps []topicPartition, tp topicPartition) bool {
	for _, x := range tps {
		if x == tp {
			return true
		}
	}
	return false
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
