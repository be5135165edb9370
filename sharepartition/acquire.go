package sharepartition

import (
	"fmt"
	"time"
)

// AcquireMode is ShareFetch's ShareAcquireMode (KIP-1206).
type AcquireMode int8

const (
	// BatchOptimized (0, and all of ShareFetch v1): MaxRecords is soft and
	// acquisition ends at a producer-batch boundary.
	BatchOptimized AcquireMode = 0
	// RecordLimit (1): at most MaxRecords records, as a single range for
	// new records.
	RecordLimit AcquireMode = 1
)

// LogBatch describes one producer batch the broker read from the log.
type LogBatch struct {
	BaseOffset, LastOffset int64
	// Control marks a control batch (commit/abort marker). It is acquired
	// like data: clients acknowledge it as GAP (share-groups.md §6).
	Control bool
	// Aborted marks a data batch of an aborted transaction. Under
	// read_committed it is archived as it is acquired (row 11).
	Aborted bool
}

// AcquireRequest is one partition's share of a ShareFetch.
type AcquireRequest struct {
	Member string
	// FetchOffset is the offset the broker read the log from (normally
	// NextFetchOffset, read just before). Batches is what it read, in
	// offset order; the first may start below FetchOffset. If the first
	// starts above it, the AVAILABLE offsets between vanished (row 10).
	FetchOffset int64
	Batches     []LogBatch
	MaxRecords  int
	// BatchSize cuts batch-optimized acquisitions into ranges at
	// producer-batch boundaries; <= 0 means no cut.
	BatchSize int
	Mode      AcquireMode
}

// AcquiredRange is one AcquiredRecords entry: inclusive offsets that share
// one delivery count.
type AcquiredRange struct {
	FirstOffset, LastOffset int64
	DeliveryCount           int16
}

// Acquire hands records to req.Member and returns the ranges acquired, in
// offset order (share-groups.md §2.7, §1.3 throttling, §1.5 in-flight
// limit, rows 1, 10, 11). Each acquired batch or offset gets a lock that
// expires at now + lock duration.
func (sp *SharePartition) Acquire(req AcquireRequest, now time.Time) ([]AcquiredRange, error) {
	if req.Mode != BatchOptimized && req.Mode != RecordLimit {
		return nil, fmt.Errorf("%w: acquire mode %d", ErrInvalidRequest, req.Mode)
	}
	if req.Member == "" {
		return nil, fmt.Errorf("%w: empty member ID", ErrInvalidRequest)
	}
	for i, lb := range req.Batches {
		if lb.BaseOffset > lb.LastOffset || i > 0 && lb.BaseOffset <= req.Batches[i-1].LastOffset {
			return nil, fmt.Errorf("%w: log batches out of order at %d", ErrInvalidRequest, i)
		}
	}
	sp.mu.Lock()
	if !sp.initialized {
		sp.mu.Unlock()
		return nil, ErrNotInitialized
	}
	a := acquisition{sp: sp, req: req, now: now}
	a.run()
	sp.advanceLocked()
	// An acquisition itself is never written; records it archived
	// (aborted, compacted away) and an SPSO it moved are.
	sp.unlockAndEmit(a.shrank)
	return a.out, nil
}

// acquisition is the working state of one Acquire call, under sp.mu.
type acquisition struct {
	sp  *SharePartition
	req AcquireRequest
	now time.Time

	toAcquire   int64 // record budget after the in-flight limit
	acquired    int64 // records acquired so far (aborted ones included)
	lastAllowed int64 // highest offset this call may acquire
	stop        bool  // throttling ended the acquisition
	shrank      bool  // records were archived without being handed out

	out []AcquiredRange
}

func (a *acquisition) run() {
	sp, req := a.sp, a.req
	if req.MaxRecords <= 0 || len(req.Batches) == 0 {
		return
	}
	readFirst := req.Batches[0].BaseOffset
	readLast := req.Batches[len(req.Batches)-1].LastOffset

	// Row 10: the log no longer has what lies between the offset the
	// broker read from and the first batch it got back. Only AVAILABLE
	// records there are archived; acquired ones end through their owners.
	if lo, hi := max(req.FetchOffset, sp.spso), min(readFirst, sp.end)-1; lo <= hi {
		sp.forRangeLocked(lo, hi, isAvailable, func(s slot) {
			sp.transitionLocked(s, evVanish, "", a.now)
			a.shrank = true
		})
		sp.advanceLocked()
	}

	fetch := sp.nextFetchLocked()
	inFlight := sp.end - sp.spso
	a.toAcquire = min(int64(req.MaxRecords), sp.cfg.MaxRecordLocks-inFlight)
	a.lastAllowed = readLast
	newAllowed := true
	if a.toAcquire <= 0 {
		if fetch >= sp.end {
			return // the window is full and nothing in it is AVAILABLE
		}
		// Re-deliver inside the full window, never beyond it (§1.5).
		a.toAcquire = min(int64(req.MaxRecords), sp.end-fetch)
		a.lastAllowed = min(readLast, sp.end-1)
		newAllowed = false
	}

	if fetch < sp.end {
		a.inWindow(max(fetch, readFirst, sp.spso))
	}
	if newAllowed && !a.stop && a.acquired < a.toAcquire && readLast >= sp.end {
		a.newRecords()
	}
}

func isAvailable(r *rec) bool { return r.state == Available }

// lastAttempt reports whether a record with count c (before this
// acquisition) is on its last delivery, which §1.3 delivers alone.
func (a *acquisition) lastAttempt(c int16) bool {
	limit := a.sp.cfg.DeliveryCountLimit
	return limit > 2 && c >= limit-1
}

// throttle is §1.3's threshold: max(2, ceil(limit/2)).
func (a *acquisition) throttle() int16 {
	limit := a.sp.cfg.DeliveryCountLimit
	return max(2, (limit+1)/2)
}

// aborted reports whether [first, last] overlaps an aborted batch that
// read_committed must archive.
func (a *acquisition) aborted(first, last int64) bool {
	if !a.sp.cfg.ReadCommitted {
		return false
	}
	for _, lb := range a.req.Batches {
		if lb.BaseOffset > last {
			return false
		}
		if lb.Aborted && lb.LastOffset >= first {
			return true
		}
	}
	return false
}

// emit records an acquired range; merge joins it to the previous range when
// adjacent with the same delivery count.
func (a *acquisition) emit(first, last int64, count int16, merge bool) {
	if n := len(a.out); merge && n > 0 && a.out[n-1].LastOffset+1 == first && a.out[n-1].DeliveryCount == count {
		a.out[n-1].LastOffset = last
		return
	}
	if a.out == nil {
		// Usually a range per log batch at most: one allocation instead
		// of one per doubling (share-fetch-per-partition-allocations).
		a.out = make([]AcquiredRange, 0, len(a.req.Batches))
	}
	a.out = append(a.out, AcquiredRange{first, last, count})
}

// inWindow re-acquires AVAILABLE records already in the window, from start.
// A batch goes whole when it is AVAILABLE, not split, inside the read range,
// not throttled and (record-limit mode) fits the budget; else offset by
// offset.
func (a *acquisition) inWindow(start int64) {
	sp := a.sp
	readFirst := a.req.Batches[0].BaseOffset
	for i := sp.searchLocked(start); i < len(sp.batches) && !a.stop && a.acquired < a.toAcquire; i++ {
		b := sp.batches[i]
		if b.first > a.lastAllowed {
			return
		}
		if b.offs == nil {
			if b.state != Available {
				continue
			}
			whole := b.first >= readFirst && b.last <= a.lastAllowed &&
				b.count < a.throttle() && !a.lastAttempt(b.count) &&
				(a.req.Mode == BatchOptimized || b.size() <= a.toAcquire-a.acquired) &&
				!a.aborted(b.first, b.last)
			if whole {
				sp.transitionLocked(slot{b, -1}, evAcquire, a.req.Member, a.now)
				a.acquired += b.size()
				a.emit(b.first, b.last, b.count, a.req.Mode == RecordLimit)
				continue
			}
		}
		a.subset(b, max(start, b.first), min(a.lastAllowed, b.last))
	}
}

// subset acquires AVAILABLE offsets of b in [lo, hi] one by one, applying
// §1.3: the first AVAILABLE offset's count decides whether the batch is
// throttled, and a record on its last attempt goes alone.
func (a *acquisition) subset(b *batch, lo, hi int64) {
	sp := a.sp
	state := func(o int64) *rec {
		if b.offs == nil {
			return &b.rec
		}
		return &b.offs[o-b.first]
	}
	first := int64(-1)
	for o := lo; o <= hi; o++ {
		if state(o).state == Available {
			first = o
			break
		}
	}
	if first < 0 {
		return
	}
	budget := a.toAcquire - a.acquired
	throttled := false
	if c := state(first).count; c >= a.throttle() && !a.lastAttempt(c) {
		if a.acquired > 0 {
			a.stop = true // the throttled batch goes alone, in a later fetch
			return
		}
		shift := uint(c - a.throttle() + 1)
		budget = min(budget, max(1, b.size()>>min(shift, 63)))
		throttled = true
	}
	sp.splitLocked(b)
	got := int64(0)
	for o := first; o <= hi && got < budget; o++ {
		r := &b.offs[o-b.first]
		if r.state != Available {
			continue
		}
		alone := a.lastAttempt(r.count)
		if alone && a.acquired > 0 {
			a.stop = true
			return
		}
		a.acquireOne(slot{b, int(o - b.first)}, o)
		got++
		if alone {
			a.stop = true
			return
		}
	}
	if throttled && got > 0 {
		a.stop = true
	}
}

// acquireOne acquires one offset of a split batch; under read_committed an
// aborted record is archived at once and not returned (row 11).
func (a *acquisition) acquireOne(s slot, o int64) {
	a.sp.transitionLocked(s, evAcquire, a.req.Member, a.now)
	a.acquired++
	if a.aborted(o, o) {
		a.sp.transitionLocked(s, evAbort, "", a.now)
		a.shrank = true
		return
	}
	a.emit(o, o, s.rec().count, true)
}

// newRecords acquires records beyond the window, creating in-flight batches
// aligned to what is returned.
func (a *acquisition) newRecords() {
	sp, lbs := a.sp, a.req.Batches
	j := 0
	for j < len(lbs) && lbs[j].LastOffset < sp.end {
		j++
	}
	if j == len(lbs) {
		return
	}
	lbs = lbs[j:]
	if base := lbs[0].BaseOffset; base > sp.end {
		// The offsets between the window and the first batch are gone
		// from the log (compaction). An empty window just moves; a
		// non-empty one records them as an archived batch so the window
		// stays contiguous and the SPSO can pass them (row 10).
		if sp.spso == sp.end {
			sp.spso, sp.end, sp.availHint = base, base, base
		} else {
			gap := sp.appendLocked(sp.end, base-1)
			gap.state = Archived
			sp.ctr.Archived[ArchivedCompacted].Add(gap.size())
			if sp.cfg.Persist != nil {
				sp.notePersistLocked(gap.first, gap.last, Archived, 0)
			}
			// The budget stays as computed before the hole, as Kafka's
			// does: holes count as in flight but do not shrink it.
		}
	}
	start := sp.end
	budget := a.toAcquire - a.acquired
	if a.req.Mode == RecordLimit {
		a.newRecordLimit(lbs, start, budget)
		return
	}
	// Batch-optimized: whole producer batches until the budget is reached
	// (soft limit), cut into ranges where a producer batch starts at least
	// BatchSize past the current range's start. A hole between producer
	// batches belongs to the range before it.
	rs, prevLast := start, start-1
	for _, lb := range lbs {
		if prevLast-start+1 >= budget {
			break
		}
		if a.req.BatchSize > 0 && prevLast >= rs && lb.BaseOffset >= rs+int64(a.req.BatchSize) {
			a.newRange(lbs, rs, lb.BaseOffset-1, false)
			rs = lb.BaseOffset
		}
		prevLast = lb.LastOffset
	}
	a.newRange(lbs, rs, prevLast, false)
	a.acquired += prevLast - start + 1
}

// newRecordLimit acquires exactly min(budget, what was read) new records as
// one range. The producer batch holding the cut-off still becomes one
// in-flight batch: its offsets past the cut-off stay AVAILABLE with count 0,
// per offset (§2.7).
func (a *acquisition) newRecordLimit(lbs []LogBatch, start, budget int64) {
	sp := a.sp
	cutoff := min(start+budget-1, lbs[len(lbs)-1].LastOffset)
	var cb *LogBatch
	for i := range lbs {
		if lbs[i].LastOffset >= cutoff {
			cb = &lbs[i]
			break
		}
	}
	partialFrom := int64(-1)
	if cb.BaseOffset <= cutoff && cb.LastOffset > cutoff {
		partialFrom = max(cb.BaseOffset, start)
	}
	fullEnd := cutoff
	if partialFrom >= 0 {
		fullEnd = partialFrom - 1
	}
	if fullEnd >= start {
		a.newRange(lbs, start, fullEnd, true)
	}
	if partialFrom >= 0 {
		b := sp.appendLocked(partialFrom, cb.LastOffset)
		b.offs = make([]rec, b.size())
		for i := range b.offs {
			b.offs[i].state = Available
		}
		for o := partialFrom; o <= cutoff; o++ {
			r := &b.offs[o-b.first]
			sp.transitionLocked(slot{b, int(o - b.first)}, evAcquire, a.req.Member, a.now)
			if a.sp.cfg.ReadCommitted && cb.Aborted {
				sp.transitionLocked(slot{b, int(o - b.first)}, evAbort, "", a.now)
				a.shrank = true
				continue
			}
			a.emit(o, o, r.count, true)
		}
	}
	a.acquired += cutoff - start + 1
}

// newRange appends [first, last] to the window as ACQUIRED by the member
// and returns it, except that under read_committed the stretches that are
// aborted transactions become separate batches archived at once (row 11).
func (a *acquisition) newRange(lbs []LogBatch, first, last int64, merge bool) {
	sp := a.sp
	add := func(s, e int64, aborted bool) {
		b := sp.appendLocked(s, e)
		b.state = Available
		sp.transitionLocked(slot{b, -1}, evAcquire, a.req.Member, a.now)
		if aborted {
			sp.transitionLocked(slot{b, -1}, evAbort, "", a.now)
			a.shrank = true
			return
		}
		a.emit(s, e, b.count, merge)
	}
	if !sp.cfg.ReadCommitted {
		add(first, last, false)
		return
	}
	// Cut where the aborted flag changes; a hole before a batch belongs
	// to the stretch before it.
	segStart, segAborted, started := first, false, false
	for _, lb := range lbs {
		if lb.LastOffset < first {
			continue
		}
		if lb.BaseOffset > last {
			break
		}
		if !started {
			segAborted, started = lb.Aborted, true
			continue
		}
		if lb.Aborted != segAborted {
			add(segStart, lb.BaseOffset-1, segAborted)
			segStart, segAborted = lb.BaseOffset, lb.Aborted
		}
	}
	add(segStart, last, segAborted)
}
