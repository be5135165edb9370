package shareserve

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sharebroker/sharebroker/internal/longpoll"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/storage"
)

// The two entry points of share serving: one ShareFetch is one
// Service.Fetch, one ShareAcknowledge one Service.Acknowledge. The handler
// checks what the request says on its own (IDs, field ranges), translates
// it into these plain types, makes the one call, and encodes the result;
// everything with state (sessions, acknowledgements, acquisition, waiting,
// closing, counting) happens here, in the order share-groups.md §2.3 and
// §3.2 give.

// Edge is what only the Kafka edge knows and share serving must ask: the
// cluster's placement and the ACLs. The broker implements it once
// (Options.Edge).
type Edge interface {
	// Leads returns nil when node leads tp, or when tp's topic or
	// partition does not exist (serving answers those itself); else the
	// error tp answers (NOT_LEADER_OR_FOLLOWER, carrying whatever the edge
	// needs to name the leader in its answer).
	Leads(node int32, tp TopicPartition) error
	// AuthorizeRead returns nil when requester may READ the topic, or
	// when no topic has that ID; else the error its partitions and their
	// acknowledgements answer. requester is the request's Requester,
	// opaque here. It is asked once per topic per request, so a denial is
	// counted and logged once.
	AuthorizeRead(requester any, topic storage.TopicID) error
}

// soleLeader is what an Edge may add to say that node leads every
// partition (a cluster of one node), so that a request need not ask Leads
// for each partition of its session: at thousands of partitions those
// asks were a visible part of every ShareFetch (issue 22). Leads is still
// asked where it guards an acquisition.
type soleLeader interface {
	LeadsAll(node int32) bool
}

// leadsAll reports whether node leads every partition: no edge, or one
// that says so.
func (s *Service) leadsAll(node int32) bool {
	if s.edge == nil {
		return true
	}
	sl, ok := s.edge.(soleLeader)
	return ok && sl.LeadsAll(node)
}

// PartitionAcks is one partition a request names, with the
// acknowledgement batches it carries for it (none for a ShareFetch that
// only names it).
type PartitionAcks struct {
	TopicPartition
	Acks []sharepartition.AckBatch
}

// FetchRequest is one ShareFetch, as the handler decoded and checked it:
// the IDs are valid, a renew fetch has zero limits, the acquire mode is
// known, and a request that opens a session (epoch 0) carries no
// acknowledgements.
type FetchRequest struct {
	Key SessionKey
	// Owner is the connection; a session it opens ends when it closes
	// (Service.OwnerClosed).
	Owner any
	// Requester is handed back to Edge.AuthorizeRead.
	Requester  any
	Epoch      int32
	Version    int16
	IsRenewAck bool
	// Partitions are the partitions the request names, in request order;
	// with epoch 0 they are the session's, else they join it.
	Partitions []PartitionAcks
	Forgotten  []TopicPartition
	MaxWait    time.Duration
	MinBytes   int32
	MaxRecords int32
	BatchSize  int32
	Mode       sharepartition.AcquireMode
	// MaxBytes is the request's: negative means only FetchMaxBytes,
	// zero acquires nothing. FetchMaxBytes is the broker's fetch.max.bytes.
	MaxBytes, FetchMaxBytes int32
	// ReadBuf, when set, receives record bytes read from files; it must
	// stay untouched until the answer is written (storage.ReadBuffer).
	ReadBuf *storage.ReadBuffer
	// Parked, when set, counts the request while it waits for records
	// (Kafka's share-fetch purgatory size).
	Parked *atomic.Int64
}

// PartitionAnswer is one partition of a ShareFetch answer. Answer is
// read-only: a partition with nothing to say shares noAnswer, and the
// others point at the request's own answers rather than copy them (a full
// answer lists thousands of partitions: issue 22).
type PartitionAnswer struct {
	TopicPartition
	*Answer
}

// noAnswer is what a listed partition with nothing to say answers.
var noAnswer Answer

// TopicOutcome is one topic a request counted for Kafka's per-topic
// share request metrics, and whether one of its partitions failed.
type TopicOutcome struct {
	TopicID storage.TopicID
	Failed  bool
}

// FetchResult is what a ShareFetch answers, and what it did for metrics.
type FetchResult struct {
	// Err is a top-level error (session epoch, session limit); nothing
	// else is set with it.
	Err error
	// LockDuration is the group's share.record.lock.duration.ms
	// (AcquisitionLockTimeoutMs).
	LockDuration time.Duration
	// Partitions are the partitions the answer lists, in order: the
	// session's that the answer must or may list (share-groups.md §2.4),
	// then those that carried acknowledgements.
	Partitions []PartitionAnswer
	// Acks are the topics whose acknowledgements were counted, once each
	// (Kafka's TotalShareAcknowledgementRequestsPerSec and its failed
	// twin); Fetches the existing topics the request acquired from
	// (TotalShareFetchRequestsPerSec, FailedShareFetchRequestsPerSec).
	Acks, Fetches []TopicOutcome
	// Expired reports that the request waited and MaxWait ended the wait
	// (DelayedShareFetchMetrics ExpiresPerSec).
	Expired bool
}

// Fetch serves one ShareFetch (share-groups.md §2.3): the session epoch
// (§2.4: 0 opens, -1 closes, else advances; beyond the session limit it
// waits MaxWait on the broker clock, then answers the limit), READ on each
// topic of the request and the session, the piggybacked acknowledgements
// (all or nothing per partition), then — unless the request closes the
// session or only renews — acquisition from the session partitions
// (§2.7) within MaxRecords and the byte budget, waiting up to MaxWait on
// the broker clock while nothing is acquired, woken by appends and by
// records becoming acquirable. A closing request (-1) answers its
// acknowledgements, then closes the session and releases the member's
// records (row 8). ctx ends the wait early: the broker is closing.
func (s *Service) Fetch(ctx context.Context, req FetchRequest) FetchResult {
	named := make([]TopicPartition, len(req.Partitions))
	for i := range req.Partitions {
		named[i] = req.Partitions[i].TopicPartition
	}
	view, err := s.Sessions.fetchEpoch(req.Key, req.Owner, req.Epoch, named, req.Forgotten)
	parts := view.parts
	if errors.Is(err, ErrShareSessionLimit) {
		longpoll.Sleep(ctx, s.clock, req.MaxWait) // then answer the limit
	}
	if err != nil {
		return FetchResult{Err: err}
	}

	cfg := s.groupConfig(req.Key.Group) // once for the whole request
	res := FetchResult{LockDuration: cfg.RecordLockDuration}
	f := s.newFetch(req.Key, cfg)
	f.expectAcks(req.Partitions)
	f.readBuf = req.ReadBuf
	f.ready, f.noneAppearing = view.ready, !view.appearing
	// READ on each topic of the session, checked on every request as
	// Kafka does; a refused partition answers the edge's error, and so do
	// its acknowledgements.
	denied := s.readDenied(req.Requester, named, view.topics)
	now := s.clock.Now()
	for _, p := range req.Partitions {
		if len(p.Acks) == 0 {
			continue
		}
		if err := denied.of(p.TopicID); err != nil {
			f.refuse(p.TopicPartition, err)
			f.denyAcks(p.TopicPartition, err) // not applied: Kafka's KafkaApis.handleAcknowledgements skips them
			continue
		}
		if err := s.leads(req.Key.Node, p.TopicPartition); err != nil {
			f.refuse(p.TopicPartition, err) // and acknowledge refuses its acknowledgements
		}
		f.acknowledge(p.TopicPartition, req.Version, req.IsRenewAck, p.Acks, now)
	}
	res.Acks = s.fetchAckOutcomes(f)

	if req.Epoch == -1 || req.IsRenewAck {
		res.Partitions = f.answered(f.acked)
		if req.Epoch == -1 {
			s.closeSession(req.Key, s.clock.Now())
		}
		return res
	}

	// Partitions another node leads, or of refused topics, are answered
	// so and not acquired from; the request then answers without waiting.
	// Only a refusal copies the session's partitions, and with nothing
	// denied on a node that leads everything there is nothing to refuse.
	ours, filtered := parts, false
	checked := parts
	if denied == nil && s.leadsAll(req.Key.Node) {
		checked = nil
	}
	for i, sp := range checked {
		err := denied.of(sp.TopicID)
		if err == nil {
			err = s.leads(req.Key.Node, sp.TopicPartition)
		}
		switch {
		case err != nil && !filtered:
			ours, filtered = append(make([]SessionPartition, 0, len(parts)), parts[:i]...), true
		case err == nil && filtered:
			ours = append(ours, sp)
		}
		if err != nil && f.Answer(sp.TopicPartition) == nil {
			f.refuse(sp.TopicPartition, err)
			a := f.answer(sp.TopicPartition)
			a.seq, a.inSession = sp.seq, true
		}
	}
	if f.plan(ours, req.Epoch, fetchLimits(req)) {
		deadline := s.clock.Now().Add(req.MaxWait)
		if f.refused {
			deadline = s.clock.Now()
		}
		f.deadline = deadline
		// A leader that moves while the request waits wakes it, and the
		// next attempt refuses the partition (fetchWork.edge).
		res.Expired = longpoll.Poll(ctx, s.clock, deadline, f.attempt, req.Parked)
		f.unpark()
		res.Fetches = s.fetchOutcomes(view.topics, f)
	}
	res.Partitions = f.answered(f.listed(req.Epoch, parts))
	return res
}

// fetchLimits is what the request may acquire: MaxRecords, and MaxBytes
// capped by fetch.max.bytes (a negative MaxBytes means only the cap;
// zero, nothing).
func fetchLimits(req FetchRequest) Limits {
	maxBytes := int64(req.FetchMaxBytes)
	switch {
	case req.MaxBytes == 0:
		maxBytes = 0
	case req.MaxBytes > 0:
		maxBytes = min(maxBytes, int64(req.MaxBytes))
	}
	return Limits{MaxRecords: req.MaxRecords, MaxBytes: maxBytes, MinBytes: req.MinBytes, BatchSize: req.BatchSize, Mode: req.Mode}
}

// leads asks the edge whether node leads tp; without an edge one node
// leads everything.
func (s *Service) leads(node int32, tp TopicPartition) error {
	if s.edge == nil {
		return nil
	}
	return s.edge.Leads(node, tp)
}

// deniedTopics are the topics a request may not READ, with the error each
// answers; nil (nothing denied) costs nothing.
type deniedTopics []deniedTopic

type deniedTopic struct {
	id  storage.TopicID
	err error
}

func (d deniedTopics) of(id storage.TopicID) error {
	for i := range d {
		if d[i].id == id {
			return d[i].err
		}
	}
	return nil
}

// readDenied asks the edge about READ on each topic among named and the
// session's topics, once per topic, in order.
func (s *Service) readDenied(requester any, named []TopicPartition, topics []storage.TopicID) deniedTopics {
	if s.edge == nil {
		return nil
	}
	var denied deniedTopics
	for i, tp := range named {
		if !seenIn(named[:i], tp.TopicID) {
			denied = s.authorizeRead(denied, requester, tp.TopicID)
		}
	}
	for _, id := range topics {
		if !seenIn(named, id) {
			denied = s.authorizeRead(denied, requester, id)
		}
	}
	return denied
}

func (s *Service) authorizeRead(denied deniedTopics, requester any, id storage.TopicID) deniedTopics {
	if err := s.edge.AuthorizeRead(requester, id); err != nil {
		denied = append(denied, deniedTopic{id, err})
	}
	return denied
}

// Topics are deduplicated by scanning the earlier partitions: a request
// names few, and nothing is allocated.
func seenIn(tps []TopicPartition, id storage.TopicID) bool {
	for i := range tps {
		if tps[i].TopicID == id {
			return true
		}
	}
	return false
}

// answered pairs each listed partition with what it answers.
func (f *fetchWork) answered(listed []TopicPartition) []PartitionAnswer {
	out := make([]PartitionAnswer, len(listed))
	for i, tp := range listed {
		out[i].TopicPartition = tp
		if out[i].Answer = f.answers[tp]; out[i].Answer == nil {
			out[i].Answer = &noAnswer
		}
	}
	return out
}

// fetchOutcomes counts one ShareFetch that went on to acquire (Kafka's
// SharePartitionManager.processShareFetch): once for each existing topic
// among the session partitions it fetched (topics, in order), as failed
// when one of the topic's session partitions answered an error. Only
// partitions with an error can fail a topic, so the answers are read, not
// the session.
func (s *Service) fetchOutcomes(topics []storage.TopicID, f *fetchWork) []TopicOutcome {
	var failed []storage.TopicID
	for tp, a := range f.answers {
		if a.Err != nil && f.inSession(tp, a) && !slices.Contains(failed, tp.TopicID) {
			failed = append(failed, tp.TopicID)
		}
	}
	var out []TopicOutcome
	for _, id := range topics {
		if s.store.TopicByID(id) != nil {
			out = append(out, TopicOutcome{TopicID: id, Failed: slices.Contains(failed, id)})
		}
	}
	return out
}

// fetchAckOutcomes counts the acknowledgements a ShareFetch carried, once
// per topic, as ackOutcome folds them.
func (s *Service) fetchAckOutcomes(f *fetchWork) []TopicOutcome {
	var out []TopicOutcome
	for i, tp := range f.acked {
		if seenIn(f.acked[:i], tp.TopicID) {
			continue
		}
		counted, failed := false, false
		for _, other := range f.acked[i:] {
			if a := f.Answer(other); other.TopicID == tp.TopicID && !a.ackDenied {
				counted, failed = ackOutcome(counted, failed, a.AckErr)
			}
		}
		out = s.countedAcks(out, tp.TopicID, counted, failed)
	}
	return out
}

// ackOutcome folds one partition's acknowledgement result into its
// topic's: counted unless the batches broke a request-level rule (Kafka's
// KafkaApis answers those before SharePartitionManager.acknowledge counts
// anything), failed if counted and refused.
func ackOutcome(counted, failed bool, err error) (bool, bool) {
	if errors.Is(err, ErrInvalidRequest) {
		return counted, failed
	}
	return true, failed || err != nil
}

// countedAcks adds a topic's acknowledgement outcome if it counted and
// the topic exists.
func (s *Service) countedAcks(out []TopicOutcome, id storage.TopicID, counted, failed bool) []TopicOutcome {
	if !counted || s.store.TopicByID(id) == nil {
		return out
	}
	return append(out, TopicOutcome{TopicID: id, Failed: failed})
}

// AckTopic is one topic of a ShareAcknowledge, with its partitions'
// batches in request order.
type AckTopic struct {
	TopicID    storage.TopicID
	Partitions []AckPartition
}

// AckPartition is one partition of an AckTopic.
type AckPartition struct {
	Partition int32
	Acks      []sharepartition.AckBatch
}

// AckRequest is one ShareAcknowledge, as the handler decoded and checked
// it (the IDs are valid).
type AckRequest struct {
	Key        SessionKey
	Requester  any // handed back to Edge.AuthorizeRead
	Epoch      int32
	Version    int16
	IsRenewAck bool
	Topics     []AckTopic
}

// AckResult is what a ShareAcknowledge answers, and what it counted.
type AckResult struct {
	// Err is a top-level error (the session epoch); nothing else is set
	// with it.
	Err error
	// LockDuration is the group's share.record.lock.duration.ms.
	LockDuration time.Duration
	// Errs are each partition's result, in request order across topics.
	Errs []error
	// Acks are the request topics whose acknowledgements were counted,
	// one per request topic, as Kafka counts them.
	Acks []TopicOutcome
}

// Acknowledge serves one ShareAcknowledge (share-groups.md §3.2): the
// session epoch (0 is invalid; -1 needs a session and does not bump; else
// it must match and bumps), READ on each topic, then each partition's
// batches, all or nothing per partition (§2.5, §2.6). The request's
// partitions do not join the session. Epoch -1 then closes the session
// and releases the member's records (row 8).
func (s *Service) Acknowledge(req AckRequest) AckResult {
	if err := s.Sessions.ackEpoch(req.Key, req.Epoch); err != nil {
		return AckResult{Err: err}
	}
	res := AckResult{LockDuration: s.groupConfig(req.Key.Group).RecordLockDuration}
	now := s.clock.Now()
	ready := s.Sessions.readyOf(req.Key) // nil once closed: the registry answers
	var denied deniedTopics
	if s.edge != nil {
		for i, rt := range req.Topics {
			if !seenAckTopic(req.Topics[:i], rt.TopicID) {
				denied = s.authorizeRead(denied, req.Requester, rt.TopicID)
			}
		}
	}
	for _, rt := range req.Topics {
		counted, failed := false, false
		for _, rp := range rt.Partitions {
			if err := denied.of(rt.TopicID); err != nil {
				res.Errs = append(res.Errs, err) // refused before anything counts
				continue
			}
			tp := TopicPartition{TopicID: rt.TopicID, Partition: rp.Partition}
			err := s.acknowledgeIn(ready, req.Key, tp, req.Version, req.IsRenewAck, rp.Acks, now)
			res.Errs = append(res.Errs, err)
			counted, failed = ackOutcome(counted, failed, err)
		}
		res.Acks = s.countedAcks(res.Acks, rt.TopicID, counted, failed)
	}
	if req.Epoch == -1 {
		s.closeSession(req.Key, s.clock.Now())
	}
	return res
}

func seenAckTopic(topics []AckTopic, id storage.TopicID) bool {
	for i := range topics {
		if topics[i].TopicID == id {
			return true
		}
	}
	return false
}
