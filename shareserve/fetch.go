package shareserve

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/storage"
)

// Answer is what one partition of a ShareFetch answers.
type Answer struct {
	Err    error // the fetch's error
	AckErr error // the result of the acknowledgements it carried
	Acked  bool  // it carried acknowledgements
	// Records are the stored batches that hold Ranges, straight from the
	// log (no copy): the broker writes them out as they are.
	Records storage.Records
	Ranges  []sharepartition.AcquiredRange
	// ackDenied: the acknowledgements were refused before anything was
	// checked (no READ on the topic), so they count nowhere.
	ackDenied bool
}

// HasData reports whether the partition acquired records.
func (a *Answer) HasData() bool { return len(a.Ranges) > 0 }

// Limits bound the acquisition of one ShareFetch.
type Limits struct {
	MaxRecords int32
	// MaxBytes is the effective byte budget (the request's MaxBytes capped
	// by fetch.max.bytes); 0 or less acquires nothing.
	MaxBytes  int64
	BatchSize int32
	Mode      sharepartition.AcquireMode
}

// fetchWork is the work of one ShareFetch request for one member: its
// acknowledgements, then acquisition over the session partitions, across
// as many long-poll attempts as Service.Fetch makes, then which partitions
// the answer lists. It belongs to one request's goroutine.
type fetchWork struct {
	s   *Service
	key SessionKey
	// readCommitted is share.isolation.level=read_committed, read once per
	// request with the rest of the group's config.
	readCommitted bool
	answers       map[TopicPartition]*Answer
	acked         []TopicPartition
	refused       bool
	// edge, when set, is asked before each acquisition whether the node
	// still leads the partition (a leader may move while the request
	// waits); its error answers the partition.
	edge Edge

	// Set by Plan.
	order []SessionPartition
	lim   Limits
	// Of the current attempt: the session partitions resolved (in order),
	// and the wake channel registered with their logs and share partitions.
	resolved  []resolvedPartition
	wake      chan<- struct{}
	unwatchFn func()
	readBuf   *storage.ReadBuffer // nil: each read makes its own buffer
}

// resolvedPartition is a session partition as one attempt found it; t and
// log are nil when the topic or partition does not exist.
type resolvedPartition struct {
	tp   TopicPartition
	t    *storage.Topic
	log  *storage.Partition
	part *Partition
}

// newFetch starts the work of one ShareFetch of key's member; cfg is the
// group's effective config, read once for the whole request.
func (s *Service) newFetch(key SessionKey, cfg group.ShareGroupConfig) *fetchWork {
	f := &fetchWork{
		s:             s,
		key:           key,
		edge:          s.edge,
		readCommitted: cfg.IsolationLevel == group.ReadCommitted,
		answers:       make(map[TopicPartition]*Answer),
	}
	f.unwatchFn = f.unwatch
	return f
}

func (f *fetchWork) answer(tp TopicPartition) *Answer {
	a := f.answers[tp]
	if a == nil {
		a = &Answer{}
		f.answers[tp] = a
	}
	return a
}

// Answer returns what tp answers, or nil if nothing happened to it.
func (f *fetchWork) Answer(tp TopicPartition) *Answer { return f.answers[tp] }

// acknowledge applies the acknowledgements the request carries for tp
// (Service.acknowledgePartition); the result becomes tp's AckErr. A
// ShareFetch applies them before it acquires anything.
func (f *fetchWork) acknowledge(tp TopicPartition, version int16, isRenewAck bool, batches []sharepartition.AckBatch, now time.Time) {
	a := f.answer(tp)
	a.Acked = true
	a.AckErr = f.s.acknowledgePartition(f.key, tp, version, isRenewAck, batches, now)
	f.acked = append(f.acked, tp)
}

// denyAcks answers the acknowledgements tp carries with err without
// applying them: the requester may not read the topic.
func (f *fetchWork) denyAcks(tp TopicPartition, err error) {
	a := f.answer(tp)
	a.Acked, a.AckErr, a.ackDenied = true, err, true
	f.acked = append(f.acked, tp)
}

// refuse answers tp with err without acquiring: the edge's reasons
// (another node leads tp, the topic may not be read). plan must not be
// given tp. Acknowledgements tp carries are applied or refused by
// acknowledge as usual. Any refusal makes the request answer without
// waiting, as for any partition error.
func (f *fetchWork) refuse(tp TopicPartition, err error) {
	f.answer(tp).Err = err
	f.refused = true
}

// plan readies acquisition from the session partitions within lim. The
// starting partition rotates with the session epoch, so MaxRecords is not
// always spent on the same partition first (share-groups.md §2.7). It
// reports false when there is nothing to acquire for: no partitions, no
// records or no bytes wanted; then the request neither acquires nor waits.
func (f *fetchWork) plan(parts []SessionPartition, epoch int32, lim Limits) bool {
	if len(parts) == 0 || lim.MaxRecords <= 0 || lim.MaxBytes <= 0 {
		return false
	}
	start := int(uint32(epoch) % uint32(len(parts)))
	f.order = append(append(make([]SessionPartition, 0, len(parts)), parts[start:]...), parts[:start]...)
	f.lim = lim
	f.resolved = make([]resolvedPartition, len(parts))
	return true
}

// attempt is one long-poll attempt, shaped for longpoll.Poll: it registers wake with the log and the share partition of every
// session partition (creating share state on first use) before it looks,
// so an append, acknowledgement, release or lock expiry in between still
// wakes the poll, then acquires once. It is done when anything was
// acquired or any partition failed; unwatch unregisters wake. Once records
// are acquired they are locked and must go out now, so MinBytes is treated
// as met.
func (f *fetchWork) attempt(wake chan<- struct{}) (done bool, unwatch func()) {
	f.wake = wake
	for i, sp := range f.order {
		r := resolvedPartition{tp: sp.TopicPartition}
		if r.t = f.s.store.TopicByID(sp.TopicID); r.t != nil {
			if r.log = r.t.Partition(sp.Partition); r.log != nil {
				r.part = f.s.Get(f.key.Group, r.t, r.log)
				r.log.Watch(wake)
				r.part.waiters.Watch(wake)
			}
		}
		f.resolved[i] = r
	}
	acquired, failed := f.acquireOnce()
	return acquired || failed, f.unwatchFn
}

func (f *fetchWork) unwatch() {
	for _, r := range f.resolved {
		if r.part != nil {
			r.log.Unwatch(f.wake)
			r.part.waiters.Unwatch(f.wake)
		}
	}
}

// acquireOnce makes one pass over the resolved partitions in order,
// acquiring up to MaxRecords and MaxBytes in all. It reports whether
// anything was acquired and whether any partition failed.
func (f *fetchWork) acquireOnce() (acquired, failed bool) {
	remaining := int64(f.lim.MaxRecords)
	bytesLeft := f.lim.MaxBytes
	now := f.s.clock.Now()
	for _, r := range f.resolved {
		a := f.answer(r.tp)
		switch {
		case r.t == nil:
			a.Err = unknownTopicID(r.tp.TopicID)
		case r.log == nil:
			a.Err = unknownPartition(r.t, r.tp.Partition)
		}
		if a.Err != nil {
			failed = true
			continue
		}
		if remaining <= 0 || bytesLeft <= 0 {
			continue
		}
		log, sp := r.log, r.part.Share
		if logStart := log.Offsets().LogStart; sp.StartOffset() < logStart {
			sp.LogStartMoved(logStart, now) // rows 9 and §1.4: archive what retention removed
		}
		if f.edge != nil {
			r.part.moving.RLock()
			if err := f.edge.Leads(f.key.Node, r.tp); err != nil {
				r.part.moving.RUnlock()
				a.Err = err
				failed = true
				continue
			}
		}
		passStart := time.Now()
		got, err := f.acquireFrom(r, sp, remaining, bytesLeft, now)
		r.part.FetchLock.pass(passStart, time.Now())
		if f.edge != nil {
			r.part.moving.RUnlock()
		}
		if err != nil {
			a.Err = err
			failed = true
			continue
		}
		if len(got) == 0 {
			continue
		}
		a.Ranges = append(a.Ranges, got...)
		a.Records = r.log.ReadRangeInto(a.Ranges[0].FirstOffset, a.Ranges[len(a.Ranges)-1].LastOffset, f.readBuf)
		for _, rg := range got {
			remaining -= rg.LastOffset - rg.FirstOffset + 1
		}
		bytesLeft -= int64(a.Records.Len())
		acquired = true
	}
	return acquired, failed
}

// acquireFrom acquires from one resolved partition within the remaining
// records and bytes.
func (f *fetchWork) acquireFrom(r resolvedPartition, sp *sharepartition.SharePartition, remaining, bytesLeft int64, now time.Time) ([]sharepartition.AcquiredRange, error) {
	if !sp.CanAcquire() {
		return nil, nil
	}
	next := sp.NextFetchOffset()
	// share-read-committed: acquire only below the last stable offset;
	// aborted transactions' batches are marked for archiving.
	end := int64(math.MaxInt64)
	if f.readCommitted {
		end = r.log.Offsets().LastStable
	}
	stored, _, err := r.log.Batches(next, end, int32(min(bytesLeft, math.MaxInt32)))
	if err != nil || len(stored) == 0 {
		// Nothing new, or the log moved under us (retention between the
		// two reads): nothing to acquire this pass.
		return nil, nil
	}
	batches := make([]sharepartition.LogBatch, len(stored))
	for i, s := range stored {
		batches[i] = sharepartition.LogBatch{BaseOffset: s.BaseOffset, LastOffset: s.LastOffset, Control: s.Control, Aborted: s.Aborted}
	}
	return sp.Acquire(sharepartition.AcquireRequest{
		Member:      f.key.Member,
		FetchOffset: next,
		Batches:     batches,
		MaxRecords:  int(remaining),
		BatchSize:   int(f.lim.BatchSize),
		Mode:        f.lim.Mode,
	}, now)
}

// listed returns the partitions the answer lists, in order, and records in
// the session what it said (share-groups.md §2.4): a full answer (epoch 0)
// lists every session partition; an incremental one only those with
// records, an error, an acknowledgement result, or added since the last
// answer. Partitions that carried acknowledgements always appear.
func (f *fetchWork) listed(epoch int32, parts []SessionPartition) []TopicPartition {
	var listed, failed []TopicPartition
	for _, sp := range parts {
		a := f.answers[sp.TopicPartition]
		include := epoch == 0 || sp.MustAppear || (a != nil && (a.HasData() || a.Err != nil || a.Acked))
		if !include {
			continue
		}
		listed = append(listed, sp.TopicPartition)
		if a != nil && a.Err != nil {
			failed = append(failed, sp.TopicPartition)
		}
	}
	appeared := slices.Clip(listed)
	for _, tp := range f.acked {
		if !slices.Contains(listed, tp) {
			listed = append(listed, tp)
		}
	}
	f.s.Sessions.responded(f.key, appeared, failed)
	return listed
}

func unknownTopicID(id storage.TopicID) error {
	return fmt.Errorf("%w: %x", storage.ErrUnknownTopicID, id)
}

func unknownPartition(t *storage.Topic, partition int32) error {
	return fmt.Errorf("%w: %s has no partition %d", storage.ErrUnknownTopic, t.Name, partition)
}
