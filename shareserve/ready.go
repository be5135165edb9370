package shareserve

import (
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sharebroker/sharebroker/storage"
)

// The ready set of a share session (docs/share-groups.md
// share-fetch-ready-set). A ShareFetch looks only at the session
// partitions that may have something to give: those that have not been
// looked at since they joined, those that gave records, an error, or were
// not reached last time, and those whose log or share partition changed
// since the last look that found nothing. A partition the session looked
// at once stays subscribed to its log and its share partition; each of
// their changes (append, LSO move, log start move, the topic's deletion,
// a leader move, an acknowledgement, release or lock expiry that frees
// records, a group config change) marks it ready and wakes the session's
// parked request. So a fetch costs what its ready partitions cost, not
// what the session holds.
//
// No change is lost between a look and the wait: a fetch clears a
// partition's mark before it looks, and subscribes before it looks; a
// change notifies after it is visible. A change before the look is seen
// by the look; one after it marks the partition again and, the request
// being registered with the set from its first attempt, wakes it.

// readySet is one session's ready partitions and parked requests. It
// keeps two marks per partition, each an atomic mirror of state under mu
// so that a notification of a partition already marked twice costs two
// loads: ready (a bit in bits, by seq, so a fetch walks the ready
// partitions in session order from where the rotation starts and stops
// where its budget ends) and checking (in check: resolved again by the
// next attempt, whatever its budget, so a deleted topic or a new
// partition is answered at once). mu is taken after Sessions.mu and
// before a Notifier's (never while notifying).
type readySet struct {
	mu    sync.Mutex
	byTP  map[TopicPartition]*watchedPart // the session's partitions
	bySeq []*watchedPart                  // by seq; nil once forgotten
	bits  []uint64                        // ready marks by seq
	check []*watchedPart
	// slab holds the watchedParts themselves, many to an allocation: at
	// thousands of partitions one object each was thousands more for the
	// GC to mark on every cycle (issue 22). A slab stays while any of its
	// parts does, so a session keeps at most its opening size plus
	// watchedSlab per partition added since, until it closes.
	slab []watchedPart
	// waiters are the wake channels of the session's parked requests
	// (one, unless a client runs two fetches of one session at once).
	waiters []chan<- struct{}
	closed  bool
}

// watchedPart is one session partition as the ready set keeps it. It is
// the storage.Subscriber of its log and share partition.
type watchedPart struct {
	set *readySet
	tp  TopicPartition
	// seq orders the session's partitions as they joined it: the order
	// of SessionPartition.seq. It is written under set.mu (renumber) and
	// read without it by the fetch that looks.
	seq      atomic.Uint64
	ready    atomic.Bool
	checking atomic.Bool
	// Guarded by set.mu: what it is subscribed to (nil: nothing), and
	// whether it left the session.
	log  *storage.Partition
	part *Partition
	gone bool
}

// newReadySet returns an empty set sized for a session opened with n
// partitions: a session of thousands then fills it without regrowing.
func newReadySet(n int) *readySet {
	return &readySet{
		byTP:  make(map[TopicPartition]*watchedPart, n),
		bySeq: make([]*watchedPart, 0, n),
		bits:  make([]uint64, 0, (n+63)/64),
		check: make([]*watchedPart, 0, n),
		slab:  make([]watchedPart, 0, n),
	}
}

// watchedSlab is the size of the slabs of the partitions that join a
// session after it opened.
const watchedSlab = 64

// newWatchedLocked returns a zero watchedPart of rs for tp, from the slab.
func (rs *readySet) newWatchedLocked(tp TopicPartition) *watchedPart {
	if len(rs.slab) == cap(rs.slab) {
		rs.slab = make([]watchedPart, 0, watchedSlab)
	}
	rs.slab = rs.slab[:len(rs.slab)+1]
	w := &rs.slab[len(rs.slab)-1]
	w.set, w.tp = rs, tp
	return w
}

// Changed marks the partition ready and to check, and wakes the
// session's parked requests (storage.Subscriber).
func (w *watchedPart) Changed() {
	if w.ready.Load() && w.checking.Load() {
		return // both marks stand: the looks that clear them see the change
	}
	rs := w.set
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if w.gone {
		return
	}
	rs.markLocked(w)
	rs.recheckLocked(w)
	rs.wakeLocked()
}

func (rs *readySet) wakeLocked() {
	for _, ch := range rs.waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (rs *readySet) markLocked(w *watchedPart) {
	seq := w.seq.Load()
	rs.bits[seq/64] |= 1 << (seq % 64)
	w.ready.Store(true)
}

func (rs *readySet) recheckLocked(w *watchedPart) {
	if !w.checking.Load() {
		w.checking.Store(true)
		rs.check = append(rs.check, w)
	}
}

// add puts tp into the set at seq, ready and to check: a partition that
// joins the session is resolved by the next fetch. It reports whether tp
// was in the set already (then nothing changes); a closed set takes
// nothing and reports false.
func (rs *readySet) add(tp TopicPartition, seq uint64) (present bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.byTP[tp] != nil {
		return true
	}
	if rs.closed {
		return false
	}
	w := rs.newWatchedLocked(tp)
	w.seq.Store(seq)
	rs.byTP[tp] = w
	for uint64(len(rs.bySeq)) <= seq {
		rs.bySeq = append(rs.bySeq, nil)
	}
	rs.bySeq[seq] = w
	for uint64(len(rs.bits))*64 <= seq {
		rs.bits = append(rs.bits, 0)
	}
	rs.markLocked(w)
	rs.recheckLocked(w)
	return false
}

// forget removes tp from the set and ends its subscriptions; it reports
// whether tp was in it.
func (rs *readySet) forget(tp TopicPartition) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	w := rs.byTP[tp]
	if w == nil {
		return false
	}
	delete(rs.byTP, tp)
	seq := w.seq.Load()
	rs.bySeq[seq] = nil
	rs.bits[seq/64] &^= 1 << (seq % 64)
	rs.dropLocked(w)
	return true
}

// close ends every subscription of the session (closed, replaced, its
// connection gone) and wakes its parked requests, which then find nothing
// ready.
func (rs *readySet) close() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.closed = true
	for _, w := range rs.byTP {
		rs.dropLocked(w)
	}
	rs.byTP, rs.bySeq, rs.bits, rs.check, rs.slab = nil, nil, nil, nil, nil
	rs.wakeLocked()
}

func (rs *readySet) dropLocked(w *watchedPart) {
	w.gone = true
	rs.subscribeLocked(w, nil, nil)
}

// renumber gives each partition of parts its seq there, keeping its
// marks (Sessions.renumberIfSparse).
func (rs *readySet) renumber(parts []SessionPartition) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	bySeq := make([]*watchedPart, len(parts))
	bits := make([]uint64, (len(parts)+63)/64)
	for i, p := range parts {
		w := rs.byTP[p.TopicPartition]
		old := w.seq.Load()
		w.seq.Store(p.seq)
		bySeq[i] = w
		if rs.bits[old/64]&(1<<(old%64)) != 0 {
			bits[p.seq/64] |= 1 << (p.seq % 64)
		}
	}
	rs.bySeq, rs.bits = bySeq, bits
}

// subscribe makes w's subscriptions those of log and part (nil: none),
// moving them when the partition's log or share partition was replaced
// (the topic deleted, the group's share state dropped). A partition that
// left the session subscribes to nothing.
func (rs *readySet) subscribe(w *watchedPart, log *storage.Partition, part *Partition) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if w.gone {
		log, part = nil, nil
	}
	rs.subscribeLocked(w, log, part)
}

// registeredPart returns the share partition the session subscribed to
// for tp if it is still the registry's for log (not dropped, of that log),
// else nil: the caller asks the registry. rs may be nil.
func (rs *readySet) registeredPart(tp TopicPartition, log *storage.Partition) *Partition {
	if rs == nil {
		return nil
	}
	rs.mu.Lock()
	var p *Partition
	if w := rs.byTP[tp]; w != nil {
		p = w.part
	}
	rs.mu.Unlock()
	if p == nil || p.Log != log || p.dropped.Load() {
		return nil
	}
	return p
}

// subscribedPart returns the share partition w is subscribed to, nil if
// none.
func (rs *readySet) subscribedPart(w *watchedPart) *Partition {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return w.part
}

func (rs *readySet) subscribeLocked(w *watchedPart, log *storage.Partition, part *Partition) {
	if w.log != log {
		if w.log != nil {
			w.log.Unsubscribe(w)
		}
		if log != nil {
			log.Subscribe(w)
		}
		w.log = log
	}
	if w.part != part {
		if w.part != nil {
			w.part.waiters.Unsubscribe(w)
		}
		if part != nil {
			part.waiters.Subscribe(w)
		}
		w.part = part
	}
}

// takeChecks returns the partitions to check, clearing their marks: a
// change from now on marks them again. buf is reused.
func (rs *readySet) takeChecks(buf []*watchedPart) []*watchedPart {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := buf[:0]
	if cap(out) < len(rs.check) { // a session's first look takes thousands
		out = make([]*watchedPart, 0, len(rs.check))
	}
	for _, w := range rs.check {
		w.checking.Store(false)
		if !w.gone {
			out = append(out, w)
		}
	}
	clear(rs.check)
	rs.check = rs.check[:0]
	return out
}

// recheck puts w back to be checked by the next attempt without waking
// anyone: it failed, or this request could not look at it.
func (rs *readySet) recheck(w *watchedPart) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if !w.gone {
		rs.recheckLocked(w)
	}
}

// restore marks w ready again without waking anyone: it gave records and
// may have more, or this request could not look at it.
func (rs *readySet) restore(w *watchedPart) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if !w.gone {
		rs.markLocked(w)
	}
}

// readyWalk visits the ready partitions once each in session order from
// start, wrapping round to it, as the rotation of share-groups.md §2.7
// orders the session's partitions.
type readyWalk struct {
	rs      *readySet
	start   uint64
	next    uint64
	wrapped bool
}

// take returns the next ready partition, clearing its mark (the caller
// looks at it after), or nil when the walk is over.
func (wk *readyWalk) take() *watchedPart {
	rs := wk.rs
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for {
		end := uint64(len(rs.bits)) * 64
		if wk.wrapped {
			end = min(end, wk.start)
		}
		if seq, ok := nextBit(rs.bits, wk.next, end); ok {
			wk.next = seq + 1
			rs.bits[seq/64] &^= 1 << (seq % 64)
			w := rs.bySeq[seq]
			w.ready.Store(false)
			return w
		}
		if wk.wrapped || wk.start == 0 {
			return nil
		}
		wk.wrapped, wk.next = true, 0
	}
}

// nextBit returns the first set bit of bits at or after from and before
// end.
func nextBit(words []uint64, from, end uint64) (uint64, bool) {
	for from < end {
		word := words[from/64] >> (from % 64)
		if word != 0 {
			seq := from + uint64(bits.TrailingZeros64(word))
			return seq, seq < end
		}
		from = (from/64 + 1) * 64
	}
	return 0, false
}

// park registers ch to be woken when a partition is marked ready; unpark
// removes it.
func (rs *readySet) park(ch chan<- struct{}) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.waiters = append(rs.waiters, ch)
}

func (rs *readySet) unpark(ch chan<- struct{}) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if i := slices.Index(rs.waiters, ch); i >= 0 {
		rs.waiters = slices.Delete(rs.waiters, i, i+1)
	}
}

// seqOf returns tp's place in the session, and whether it is in it.
func (rs *readySet) seqOf(tp TopicPartition) (uint64, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if w := rs.byTP[tp]; w != nil {
		return w.seq.Load(), true
	}
	return 0, false
}
