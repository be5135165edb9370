package sharepartition

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
)

// SharePartition is the state of one (share group, topic, partition). All
// exported methods are safe for concurrent use; each takes the partition's
// mutex for one change and never holds it while calling out (OnChange runs
// after unlocking). Lock-expiry callbacks from the timer service take the
// same mutex.
type SharePartition struct {
	timers *locktimer.Service

	// writeMu serializes the writes of persisted state (writePersisted),
	// so they reach cfg.Persist in the order of the changes without
	// sp.mu held across the write. Order: writeMu, then mu (briefly).
	writeMu sync.Mutex

	mu sync.Mutex // guards everything below

	cfg Config
	ctr *Counters // cfg.Counters, or a private one so increments need no nil check

	// maxLimit is the highest delivery count limit ever configured: an
	// AVAILABLE record whose count already reached a later-lowered limit
	// may still be acquired once more, so counts are bounded by this one.
	maxLimit int16

	initialized bool
	// The window is [spso, end): every offset below spso is finished and
	// nothing at or above end has been fetched. Kafka's inclusive SPEO is
	// end-1 when the window is non-empty.
	spso, end int64

	// batches tile the window in offset order: the batches whose last
	// offset is >= spso cover [spso, end) without gaps or overlaps (the
	// first may start below spso). Batches wholly below spso are kept only
	// while they hold ACQUIRED records (row 9: the log start moved under
	// them); they are dropped once those end.
	batches []*batch

	// availHint is a lower bound on the lowest AVAILABLE offset in the
	// window; acquisition only removes availability, and every path that
	// makes a record AVAILABLE lowers the hint.
	availHint int64

	lockGen   uint64 // generation of the last armed lock; a fire carries its own
	liveLocks int    // armed lock handles; equals the number of ACQUIRED records/batches

	// lockExpirations counts this partition's records whose lock expired;
	// Counters.LockExpirations sums every partition's (Stats).
	lockExpirations int64

	checkedSPSO int64 // SPSO seen by the previous CheckInvariants

	dead []DeadLetter // archived since the last takeDeadLocked; empty without cfg.OnDeadLetter
	// Persistence (persist.go), used only when cfg.Persist is set: the
	// attempt ends and archives not yet queued, the SPSO last queued, the
	// state epoch (0 at initialisation, one more at each reset), and the
	// writes queued in the order of the changes, not yet handed to
	// cfg.Persist.
	pending       []PersistedBatch
	persistedSPSO int64
	stateEpoch    int32
	unwritten     []Persisted

	// story is the ring of record-story events (story.go);
	// releaseReason is why ReleaseMember is letting records go, for the
	// events it tells.
	story         storyRing
	releaseReason StoryReason
}

// rec is the state of one record, or of a whole batch that has not been
// split. Invariant: state == Acquired <=> owner != "" <=> h != nil.
type rec struct {
	state    State
	count    int16 // delivery count: the number of acquisitions
	owner    string
	h        *locktimer.Handle // the live lock while ACQUIRED
	gen      uint64            // generation the live lock was armed with
	deadline int64             // lock deadline, Unix ns, while ACQUIRED
}

// batch is an in-flight batch (Kafka's InFlightBatch): one batch-wide rec
// until split, then one rec per offset. A batch never merges back.
type batch struct {
	first, last int64
	rec               // batch-wide state; zero once split
	offs        []rec // per-offset state once split; len == last-first+1
}

func (b *batch) size() int64 { return b.last - b.first + 1 }

// slot addresses one rec: a whole batch (idx < 0) or one offset of a split
// batch.
type slot struct {
	b   *batch
	idx int
}

func (s slot) rec() *rec {
	if s.idx < 0 {
		return &s.b.rec
	}
	return &s.b.offs[s.idx]
}

func (s slot) span() (first, last int64) {
	if s.idx < 0 {
		return s.b.first, s.b.last
	}
	o := s.b.first + int64(s.idx)
	return o, o
}

// New returns an uninitialised share partition. It panics if cfg is
// invalid: the broker validates group configs before they get here.
func New(cfg Config, timers *locktimer.Service) *SharePartition {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	sp := &SharePartition{timers: timers}
	sp.setConfigLocked(cfg)
	return sp
}

// SetConfig replaces the effective settings (a group config changed).
func (sp *SharePartition) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.setConfigLocked(cfg)
	return nil
}

// Config returns the effective settings.
func (sp *SharePartition) Config() Config {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.cfg
}

func (sp *SharePartition) setConfigLocked(cfg Config) {
	sp.cfg = cfg
	sp.ctr = cfg.Counters
	if sp.ctr == nil {
		sp.ctr = new(Counters)
	}
	sp.maxLimit = max(sp.maxLimit, cfg.DeliveryCountLimit)
	sp.story.resize(cfg.StoryEvents)
}

// InitializeIfNeeded sets the SPSO to start if no state exists yet, and
// reports whether it did. The broker resolves start from
// share.auto.offset.reset (§1.7) before calling.
func (sp *SharePartition) InitializeIfNeeded(start int64) bool {
	sp.mu.Lock()
	if sp.initialized {
		sp.mu.Unlock()
		return false
	}
	sp.resetLocked(start)
	sp.persistSnapshotLocked()
	sp.unlockAndEmit(false)
	return true
}

// Initialized reports whether the SPSO has been chosen.
func (sp *SharePartition) Initialized() bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.initialized
}

// ResetStart discards all state and starts over at offset
// (AlterShareGroupOffsets, §5.2). Live locks are cancelled; this is the
// only way the SPSO moves back.
func (sp *SharePartition) ResetStart(offset int64) {
	sp.mu.Lock()
	sp.resetLocked(offset)
	sp.stateEpoch++
	sp.persistSnapshotLocked()
	sp.unlockAndEmit(true)
}

func (sp *SharePartition) resetLocked(offset int64) {
	for _, b := range sp.batches {
		sp.disarmLocked(&b.rec)
		for i := range b.offs {
			sp.disarmLocked(&b.offs[i])
		}
	}
	sp.batches = nil
	sp.initialized = true
	sp.spso, sp.end, sp.availHint = offset, offset, offset
	sp.checkedSPSO = offset
}

// NextFetchOffset is where the broker reads the log from for the next
// acquisition: the lowest AVAILABLE offset in the window, else the end of
// the window (§1.4).
func (sp *SharePartition) NextFetchOffset() int64 {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.nextFetchLocked()
}

// InFlight is the number of offsets in the window, whatever their state.
func (sp *SharePartition) InFlight() int64 {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.end - sp.spso
}

// CanAcquire reports whether an acquisition could yield records if the log
// has them: something in the window is AVAILABLE, or the window has room
// (§1.5).
func (sp *SharePartition) CanAcquire() bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.initialized && (sp.nextFetchLocked() < sp.end || sp.end-sp.spso < sp.cfg.MaxRecordLocks)
}

// StartOffset returns the SPSO.
func (sp *SharePartition) StartOffset() int64 {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.spso
}

// searchLocked returns the index of the first batch whose last offset is
// >= off (len(batches) if none).
func (sp *SharePartition) searchLocked(off int64) int {
	return sort.Search(len(sp.batches), func(i int) bool { return sp.batches[i].last >= off })
}

func (sp *SharePartition) nextFetchLocked() int64 {
	from := max(sp.availHint, sp.spso)
	for i := sp.searchLocked(from); i < len(sp.batches); i++ {
		b := sp.batches[i]
		if b.offs == nil {
			if b.state == Available {
				sp.availHint = max(b.first, from)
				return sp.availHint
			}
			continue
		}
		for o := max(b.first, from); o <= b.last; o++ {
			if b.offs[o-b.first].state == Available {
				sp.availHint = o
				return o
			}
		}
	}
	sp.availHint = sp.end
	return sp.end
}

// markAvailableLocked keeps availHint a lower bound after first became
// AVAILABLE.
func (sp *SharePartition) markAvailableLocked(first int64) {
	sp.availHint = min(sp.availHint, first)
}

// advanceLocked moves the SPSO over every leading terminal offset and drops
// batches that fell wholly below it (§1.4). It never moves the SPSO back.
func (sp *SharePartition) advanceLocked() {
	i := sp.searchLocked(sp.spso)
walk:
	for ; i < len(sp.batches); i++ {
		b := sp.batches[i]
		if b.offs == nil {
			if !b.state.Terminal() {
				break
			}
			sp.spso = b.last + 1
			continue
		}
		for o := max(sp.spso, b.first); o <= b.last; o++ {
			if !b.offs[o-b.first].state.Terminal() {
				sp.spso = o
				break walk
			}
		}
		sp.spso = b.last + 1
	}
	if sp.spso > sp.end {
		panic(fmt.Sprintf("sharepartition: SPSO %d walked past end %d", sp.spso, sp.end))
	}
	sp.dropLocked()
}

// dropLocked removes the leading batches wholly below the SPSO, except
// those still holding ACQUIRED records (row 9 leftovers, kept so their
// locks can end them).
func (sp *SharePartition) dropLocked() {
	k := 0
	for k < len(sp.batches) && sp.batches[k].last < sp.spso {
		k++
	}
	if k == 0 {
		return
	}
	keep := sp.batches[:0:0]
	for _, b := range sp.batches[:k] {
		if b.holdsAcquired() {
			keep = append(keep, b)
		}
	}
	// keep is a fresh slice, so copying it over the tail of the prefix is
	// safe. Clear the dropped part so the backing array does not pin it.
	copy(sp.batches[k-len(keep):], keep)
	clear(sp.batches[:k-len(keep)])
	sp.batches = sp.batches[k-len(keep):]
}

func (b *batch) holdsAcquired() bool {
	if b.offs == nil {
		return b.state == Acquired
	}
	for i := range b.offs {
		if b.offs[i].state == Acquired {
			return true
		}
	}
	return false
}

// appendLocked adds a new batch at the end of the window; its first offset
// must be end.
func (sp *SharePartition) appendLocked(first, last int64) *batch {
	if first != sp.end || last < first {
		panic(fmt.Sprintf("sharepartition: append [%d,%d] at end %d", first, last, sp.end))
	}
	b := &batch{first: first, last: last}
	sp.batches = append(sp.batches, b)
	sp.end = last + 1
	return b
}

// splitLocked gives b per-offset state. An ACQUIRED batch's lock is
// replaced by one lock per offset with the same deadline (the batch's
// remaining time).
func (sp *SharePartition) splitLocked(b *batch) {
	if b.offs != nil {
		return
	}
	offs := make([]rec, b.size())
	for i := range offs {
		offs[i] = rec{state: b.state, count: b.count, owner: b.owner}
	}
	wasAcquired := b.state == Acquired
	deadline := b.deadline
	sp.disarmLocked(&b.rec)
	b.rec = rec{}
	b.offs = offs
	if wasAcquired {
		for i := range offs {
			sp.armLocked(slot{b, i}, time.Unix(0, deadline))
		}
	}
}

// forRangeLocked calls do for every rec in [lo, hi] for which want is true,
// a whole batch at a time where the batch lies inside the range and is not
// split, else offset by offset (splitting the batch). Batches wholly below
// the SPSO are included: callers bound lo.
func (sp *SharePartition) forRangeLocked(lo, hi int64, want func(*rec) bool, do func(slot)) {
	for i := sp.searchLocked(lo); i < len(sp.batches); i++ {
		b := sp.batches[i]
		if b.first > hi {
			return
		}
		if b.offs == nil {
			if !want(&b.rec) {
				continue
			}
			if b.first >= lo && b.last <= hi {
				do(slot{b, -1})
				continue
			}
			sp.splitLocked(b)
		}
		for o := max(lo, b.first); o <= min(hi, b.last); o++ {
			if want(&b.offs[o-b.first]) {
				do(slot{b, int(o - b.first)})
			}
		}
	}
}

// transitionLocked applies ev to the rec at s through the state table and
// carries out the row's effects (delivery count, owner, lock, counters).
// An illegal move here is our bug: callers validate client input first.
func (sp *SharePartition) transitionLocked(s slot, ev event, member string, now time.Time) {
	r := s.rec()
	to := next[r.state][ev]
	if to == 0 {
		first, last := s.span()
		panic(fmt.Sprintf("sharepartition: illegal %v in state %v at [%d,%d]", ev, r.state, first, last))
	}
	first, last := s.span()
	n := last - first + 1
	owner := r.owner // who held it before ev, for the story
	switch ev {
	case evAcquire:
		r.count++
		r.owner = member
		sp.ctr.Acquired.Add(n)
		sp.armLocked(s, now.Add(sp.cfg.LockDuration))
	case evRenew:
		sp.disarmLocked(r)
		sp.armLocked(s, now.Add(sp.cfg.LockDuration))
		sp.ctr.Acknowledged[AckRenew].Add(n)
	case evAccept, evReject, evGap, evRelease, evAbort:
		sp.disarmLocked(r)
		r.owner = ""
	case evExpire, evMemberGone:
		// An expiry arrives with the handle already cleared by expire.
		sp.disarmLocked(r)
		r.owner = ""
	case evLeaderMoved:
		// The attempt is undone: the count goes back to the one persisted
		// when it began.
		sp.disarmLocked(r)
		r.owner = ""
		r.count--
		sp.ctr.LeaderMoved.Add(n)
	}
	switch ev {
	case evAccept:
		sp.ctr.Acknowledged[AckAccept].Add(n)
	case evReject:
		sp.ctr.Acknowledged[AckReject].Add(n)
		sp.ctr.Archived[ArchivedRejected].Add(n)
		sp.noteDeadLocked(first, last, r.count, DeadLetterRejected)
	case evGap:
		sp.ctr.Acknowledged[AckGap].Add(n)
		sp.ctr.Archived[ArchivedRejected].Add(n)
	case evRelease:
		sp.ctr.Acknowledged[AckRelease].Add(n)
	case evExpire:
		sp.ctr.LockExpirations.Add(n)
		sp.lockExpirations += n
	case evMemberGone:
		sp.ctr.MemberReleased.Add(n)
	case evLogStart:
		sp.ctr.Archived[ArchivedLogStart].Add(n)
	case evVanish:
		sp.ctr.Archived[ArchivedCompacted].Add(n)
	case evAbort:
		sp.ctr.Archived[ArchivedAborted].Add(n)
	}
	// The guard: an attempt that ends without an acknowledgement archives
	// at the delivery count limit (rows 5, 7, 8) or below the SPSO (rows
	// 7, 8: the log start moved under an ACQUIRED record).
	var why StoryReason
	if to == Available {
		switch {
		case last < sp.spso:
			to, why = Archived, ReasonLogStartMoved
			sp.ctr.Archived[ArchivedLogStart].Add(n)
		case r.count >= sp.cfg.DeliveryCountLimit && ev != evLeaderMoved:
			// A moved record is loaded AVAILABLE whatever its count, like
			// any AVAILABLE record past a lowered limit.
			to, why = Archived, ReasonDeliveryLimit
			sp.ctr.Archived[ArchivedDeliveryLimit].Add(n)
			sp.noteDeadLocked(first, last, r.count, DeadLetterDeliveryLimit)
		default:
			sp.markAvailableLocked(first)
		}
	}
	r.state = to
	if sp.story.size != 0 {
		sp.tellTransitionLocked(ev, r, first, last, owner, to, why, now)
	}
	if sp.cfg.Persist != nil && to != Acquired {
		sp.notePersistLocked(first, last, to, r.count)
	}
}

// armLocked arms a lock for the ACQUIRED rec at s. The callback carries a
// fresh generation so a fire that lost a race with Cancel (or with a split
// or a renewal) recognises itself as stale.
func (sp *SharePartition) armLocked(s slot, deadline time.Time) {
	r := s.rec()
	if r.h != nil {
		panic("sharepartition: arming a second lock")
	}
	sp.lockGen++
	gen := sp.lockGen
	r.gen = gen
	r.deadline = deadline.UnixNano()
	b, idx := s.b, s.idx
	r.h = sp.timers.Schedule(deadline, func() { sp.expire(b, idx, gen) })
	sp.liveLocks++
}

func (sp *SharePartition) disarmLocked(r *rec) {
	if r.h == nil {
		return
	}
	sp.timers.Cancel(r.h)
	r.h = nil
	r.deadline = 0
	sp.liveLocks--
}

// expire is the lock callback (row 7). It acts only if the rec it was armed
// for is still ACQUIRED under the same lock generation.
func (sp *SharePartition) expire(b *batch, idx int, gen uint64) {
	sp.mu.Lock()
	if idx < 0 && b.offs != nil || idx >= 0 && b.offs == nil {
		sp.mu.Unlock() // split after arming (batch lock) or stale per-offset lock
		return
	}
	s := slot{b, idx}
	r := s.rec()
	if r.state != Acquired || r.h == nil || r.gen != gen {
		sp.mu.Unlock()
		return
	}
	r.h = nil // it fired; nothing to cancel
	// The lock expired at its deadline on the broker clock, however late
	// its timer ran: that is the time the story tells.
	expired := time.Unix(0, r.deadline)
	r.deadline = 0
	sp.liveLocks--
	sp.transitionLocked(s, evExpire, "", expired)
	sp.advanceLocked()
	sp.unlockAndEmit(true)
}
