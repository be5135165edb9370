package shareserve

import (
	"cmp"
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
	// seq is the partition's place in the session when inSession is set
	// (SessionPartition.seq); listed orders an incremental answer by it.
	seq       uint64
	inSession bool
}

// HasData reports whether the partition acquired records (a nil Answer:
// nothing happened to it).
func (a *Answer) HasData() bool { return a != nil && len(a.Ranges) > 0 }

// Limits bound the acquisition of one ShareFetch.
type Limits struct {
	MaxRecords int32
	// MaxBytes is the effective byte budget (the request's MaxBytes capped
	// by fetch.max.bytes); 0 or less acquires nothing.
	MaxBytes int64
	// MinBytes is the request's: until the deadline, nothing is acquired
	// while the session's acquirable partitions hold fewer log bytes
	// (share-fetch-min-bytes).
	MinBytes  int32
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

	// Set by plan: the session's ready set, the budget, and the order of
	// acquisition: from the partition at startSeq on, in session order,
	// then round to it (share-groups.md §2.7).
	ready *readySet
	// noneAppearing: no session partition is marked MustAppear, so an
	// incremental answer need not look for them.
	noneAppearing bool
	lim           Limits
	// deadline is when the request stops waiting: its last attempt
	// acquires whatever MinBytes says.
	deadline time.Time
	startSeq uint64
	maxSeq   uint64 // the last of the partitions plan was given
	// taken is the current attempt's partitions to check; wake the
	// channel the first attempt registered with the ready set (unpark
	// removes it).
	taken []*watchedPart
	wake  chan<- struct{}
	// afterLook, set by tests, runs after each look at a partition: a
	// change made there must not be lost (share-fetch-ready-set).
	afterLook func(TopicPartition)
	unwatchFn func()
	readBuf   *storage.ReadBuffer // nil: each read makes its own buffer
	// logBatches is acquireFrom's buffer for the batches it hands the
	// share partition, which keeps none of them past Acquire: one
	// allocation per request rather than one per partition that gave
	// records (**share-fetch-per-partition-allocations**).
	logBatches []sharepartition.LogBatch
}

// resolvedPartition is a session partition as an attempt found it; t and
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
	f.unwatchFn = func() {} // the registration lasts the request: unpark
	return f
}

// expectAcks sizes the answers and the acknowledged list for the
// partitions of parts that carry acknowledgements, and as many acquiring:
// at thousands of partitions a fetch acknowledges dozens, and both grew
// one by one.
func (f *fetchWork) expectAcks(parts []PartitionAcks) {
	n := 0
	for i := range parts {
		if len(parts[i].Acks) > 0 {
			n++
		}
	}
	if n > 0 {
		f.answers = make(map[TopicPartition]*Answer, 2*n)
		f.acked = make([]TopicPartition, 0, n)
	}
}

func (f *fetchWork) answer(tp TopicPartition) *Answer {
	a := f.answers[tp]
	if a == nil {
		a = &Answer{}
		f.answers[tp] = a
	}
	return a
}

// sessionAnswer is answer for a session partition the request looked at,
// with its place in the session. Only a partition with something to say
// (records, an error) gets one: most looks at thousands of partitions
// find nothing.
func (f *fetchWork) sessionAnswer(w *watchedPart) *Answer {
	a := f.answer(w.tp)
	a.seq, a.inSession = w.seq.Load(), true
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
	a.AckErr = f.s.acknowledgeIn(f.ready, f.key, tp, version, isRenewAck, batches, now)
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

// plan readies acquisition from the session partitions parts within lim.
// The starting partition rotates with the session epoch, so MaxRecords is
// not always spent on the same partition first (share-groups.md §2.7). It
// reports false when there is nothing to acquire for: no partitions, no
// records or no bytes wanted; then the request neither acquires nor waits.
// Attempts look only at the session's ready partitions among parts
// (share-fetch-ready-set), in the order the rotation gives them.
func (f *fetchWork) plan(parts []SessionPartition, epoch int32, lim Limits) bool {
	if len(parts) == 0 || lim.MaxRecords <= 0 || lim.MaxBytes <= 0 {
		return false
	}
	if f.ready == nil {
		if f.ready = f.s.Sessions.readyOf(f.key); f.ready == nil {
			return false // the session ended meanwhile
		}
	}
	f.startSeq = parts[int(uint32(epoch)%uint32(len(parts)))].seq
	f.maxSeq = parts[len(parts)-1].seq
	f.lim = lim
	return true
}

// attempt is one long-poll attempt, shaped for longpoll.Poll
// (share-fetch-ready-set). The first registers wake with the session's
// ready set, for the whole request. Each then resolves the partitions
// marked to check (new to the session, or changed since), answering a
// partition that does not exist, creating share state on first use and
// subscribing the session to the log and the share partition; then it
// walks the ready partitions in rotated order, acquiring, until the budget
// is spent. Marks are cleared before the look, so an append,
// acknowledgement, release or lock expiry in between marks the partition
// again and wakes the poll. It is done when anything was acquired or any
// partition failed. Before its deadline it acquires nothing while the
// acquirable partitions hold fewer log bytes than MinBytes
// (share-fetch-min-bytes), and waits for more.
func (f *fetchWork) attempt(wake chan<- struct{}) (done bool, unwatch func()) {
	if f.wake == nil {
		f.wake = wake
		f.ready.park(wake)
	}
	failed := f.checkChanged()
	// A partition error answers now, with what the others give.
	if !failed && f.lim.MinBytes > 1 && f.s.clock.Now().Before(f.deadline) && !f.minBytesMet() {
		return false, f.unwatchFn
	}
	acquired, acquireFailed := f.acquireOnce()
	return acquired || failed || acquireFailed, f.unwatchFn
}

// minBytesMet reports whether the ready partitions that can acquire hold
// at least MinBytes of log between their next fetch offset and the high
// watermark (the last stable offset under read_committed), each counted
// up to an equal share of MaxBytes, as Kafka's DelayedShareFetch
// isMinBytesSatisfied estimates it: as if every byte there were
// acquirable. The ready marks it takes are put back without a wake, so
// the request waits for the next change.
func (f *fetchWork) minBytesMet() bool {
	walk := readyWalk{rs: f.ready, start: f.startSeq, next: f.startSeq}
	var taken []*watchedPart
	defer func() {
		for _, w := range taken {
			f.ready.restore(w)
		}
	}()
	var logs []*storage.Partition
	var from, to []int64
	for w := walk.take(); w != nil; w = walk.take() {
		taken = append(taken, w)
		if !f.lookable(w) {
			continue
		}
		r, err := f.resolve(w)
		if err != nil {
			return true // an error answers now: the acquiring pass reports it
		}
		if !r.part.Share.CanAcquire() {
			continue
		}
		offs := r.log.Offsets()
		end := offs.HighWatermark
		if f.readCommitted {
			end = offs.LastStable
		}
		logs, from, to = append(logs, r.log), append(from, r.part.Share.NextFetchOffset()), append(to, end)
	}
	if len(logs) == 0 {
		return false
	}
	perPartition := max(f.lim.MaxBytes/int64(len(logs)), 1)
	need := int64(f.lim.MinBytes)
	total := int64(0)
	for i, log := range logs {
		total += min(log.BytesFrom(from[i], to[i], min(need-total, perPartition)), perPartition)
		if total >= need {
			return true
		}
	}
	return false
}

// lookable reports whether this request may look at w: it is one of the
// partitions plan was given (not refused, not joined since).
func (f *fetchWork) lookable(w *watchedPart) bool {
	if w.seq.Load() > f.maxSeq {
		return false
	}
	a := f.answers[w.tp]
	return a == nil || a.Err == nil
}

// resolve finds w's topic, log and share partition (made on first use) and
// subscribes the session to them, or to nothing when the partition does
// not exist; then it answers that partition's error.
func (f *fetchWork) resolve(w *watchedPart) (r resolvedPartition, err error) {
	r.tp = w.tp
	if r.t = f.s.store.TopicByID(w.tp.TopicID); r.t != nil {
		if r.log = r.t.Partition(w.tp.Partition); r.log != nil {
			// The share partition the session subscribed to is the
			// registry's while it is not dropped and is of this log:
			// no registry lookup per look (issue 22).
			if p := f.ready.subscribedPart(w); p != nil && p.Log == r.log && !p.dropped.Load() {
				r.part = p
			} else {
				r.part = f.s.Get(f.key.Group, r.t, r.log)
			}
		}
	}
	f.ready.subscribe(w, r.log, r.part)
	switch {
	case r.t == nil:
		err = unknownTopicID(w.tp.TopicID)
	case r.log == nil:
		err = unknownPartition(r.t, w.tp.Partition)
	}
	if err != nil {
		f.sessionAnswer(w).Err = err
		f.ready.recheck(w) // answered again until it exists or leaves
	}
	return r, err
}

// checkChanged resolves the partitions marked to check, whatever the
// budget: those new to the session get their share state now, as the
// first fetch that names them made it, and one that does not exist (or no
// longer) is answered so. It reports whether any failed.
func (f *fetchWork) checkChanged() (failed bool) {
	f.taken = f.ready.takeChecks(f.taken)
	for _, w := range f.taken {
		if !f.lookable(w) {
			f.ready.recheck(w)
			continue
		}
		if _, err := f.resolve(w); err != nil {
			failed = true
		}
	}
	return failed
}

// unpark ends the registration the first attempt made.
func (f *fetchWork) unpark() {
	if f.wake != nil {
		f.ready.unpark(f.wake)
	}
}

// acquireOnce walks the ready partitions in rotated order, acquiring up
// to MaxRecords and MaxBytes in all; the walk ends where the budget does,
// and what it did not reach stays ready. A partition that gives records
// stays ready (it may have more); one that gives nothing leaves the set
// until its next change. It reports whether anything was acquired and
// whether any partition failed.
func (f *fetchWork) acquireOnce() (acquired, failed bool) {
	remaining := int64(f.lim.MaxRecords)
	bytesLeft := f.lim.MaxBytes
	now := f.s.clock.Now()
	walk := readyWalk{rs: f.ready, start: f.startSeq, next: f.startSeq}
	var skipped []*watchedPart
	for remaining > 0 && bytesLeft > 0 {
		w := walk.take()
		if w == nil {
			break
		}
		if !f.lookable(w) {
			skipped = append(skipped, w)
			continue
		}
		r, err := f.resolve(w)
		if err != nil {
			failed = true
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
				f.sessionAnswer(w).Err = err
				failed = true
				f.ready.restore(w)
				continue
			}
		}
		passStart := time.Now()
		got, err := f.acquireFrom(r, sp, remaining, bytesLeft, now)
		r.part.FetchLock.pass(passStart, time.Now())
		if f.edge != nil {
			r.part.moving.RUnlock()
		}
		if f.afterLook != nil {
			f.afterLook(r.tp)
		}
		if err != nil {
			f.sessionAnswer(w).Err = err
			failed = true
			f.ready.restore(w)
			continue
		}
		if len(got) == 0 {
			continue // nothing acquirable: it leaves the ready set
		}
		f.ready.restore(w)
		a := f.sessionAnswer(w)
		if a.Ranges == nil {
			a.Ranges = got // Acquire's own slice: no copy (share-fetch-per-partition-allocations)
		} else {
			a.Ranges = append(a.Ranges, got...)
		}
		a.Records = r.log.ReadRangeInto(a.Ranges[0].FirstOffset, a.Ranges[len(a.Ranges)-1].LastOffset, f.readBuf)
		for _, rg := range got {
			remaining -= rg.LastOffset - rg.FirstOffset + 1
		}
		bytesLeft -= int64(a.Records.Len())
		acquired = true
	}
	for _, w := range skipped {
		f.ready.restore(w)
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
	batches := f.logBatches[:0]
	for _, s := range stored {
		batches = append(batches, sharepartition.LogBatch{BaseOffset: s.BaseOffset, LastOffset: s.LastOffset, Control: s.Control, Aborted: s.Aborted})
	}
	f.logBatches = batches
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
// answer. Partitions that carried acknowledgements always appear. An
// incremental answer is built from the answers and the partitions marked
// to appear, ordered by their place in the session: it costs what it
// lists (share-fetch-ready-set).
func (f *fetchWork) listed(epoch int32, parts []SessionPartition) []TopicPartition {
	// said: each partition the answer lists, in session order, with
	// MustAppear set when it failed (it must appear again).
	var said []SessionPartition
	if epoch == 0 {
		said = make([]SessionPartition, 0, len(parts))
		for _, sp := range parts {
			a := f.answers[sp.TopicPartition]
			said = append(said, SessionPartition{TopicPartition: sp.TopicPartition, MustAppear: a != nil && a.Err != nil, seq: sp.seq})
		}
	} else {
		// Sized for the answers: it grew one by one on every fetch.
		said = make([]SessionPartition, 0, len(f.answers))
		for tp, a := range f.answers {
			if (a.HasData() || a.Err != nil || a.Acked) && f.inSession(tp, a) {
				said = append(said, SessionPartition{TopicPartition: tp, MustAppear: a.Err != nil, seq: a.seq})
			}
		}
		if !f.noneAppearing {
			for _, sp := range parts {
				if a := f.answers[sp.TopicPartition]; sp.MustAppear && (a == nil || !(a.HasData() || a.Err != nil || a.Acked)) {
					said = append(said, SessionPartition{TopicPartition: sp.TopicPartition, seq: sp.seq})
				}
			}
		}
		slices.SortFunc(said, func(a, b SessionPartition) int { return cmp.Compare(a.seq, b.seq) })
	}
	listed := make([]TopicPartition, 0, len(said)+len(f.acked))
	for _, sp := range said {
		listed = append(listed, sp.TopicPartition)
	}
	// Acknowledged partitions outside the session are listed too (after
	// the session's), but the session has no mark to change for them.
	for _, tp := range f.acked {
		if !slices.Contains(listed, tp) {
			listed = append(listed, tp)
		}
	}
	f.s.Sessions.responded(f.key, said)
	return listed
}

// inSession reports whether tp, answered a, is a partition of the session,
// setting a's seq if it was not known (acknowledgements are answered
// before the session's partitions are looked at).
func (f *fetchWork) inSession(tp TopicPartition, a *Answer) bool {
	if !a.inSession && f.ready != nil {
		a.seq, a.inSession = f.ready.seqOf(tp)
	}
	return a.inSession
}

func unknownTopicID(id storage.TopicID) error {
	return fmt.Errorf("%w: %x", storage.ErrUnknownTopicID, id)
}

func unknownPartition(t *storage.Topic, partition int32) error {
	return fmt.Errorf("%w: %s has no partition %d", storage.ErrUnknownTopic, t.Name, partition)
}
