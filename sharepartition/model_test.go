package sharepartition

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// The randomized test drives a SharePartition and a deliberately naive
// reference model (one map entry per offset, no batches, no timers) with
// the same operations and compares them after each one. Acquisition is not
// predicted exactly (batch alignment and throttling are the implementation's
// business); the model checks what any correct answer must satisfy and then
// follows it.

type mrec struct {
	state    State
	count    int16
	owner    string
	deadline time.Time
}

type model struct {
	cfg      Config
	spso     int64
	end      int64
	recs     map[int64]*mrec
	maxLimit int16
}

func (m *model) nextFetch() int64 {
	for o := m.spso; o < m.end; o++ {
		if r := m.recs[o]; r != nil && r.state == Available {
			return o
		}
	}
	return m.end
}

func (m *model) advance() {
	for m.spso < m.end {
		r := m.recs[m.spso]
		if r == nil || !r.state.Terminal() {
			break
		}
		m.spso++
	}
	for o, r := range m.recs {
		if o < m.spso && r.state != Acquired {
			delete(m.recs, o)
		}
	}
}

// endAttempt is rows 5, 7 and 8 on one offset.
func (m *model) endAttempt(o int64, r *mrec) {
	r.owner, r.deadline = "", time.Time{}
	if r.count >= m.cfg.DeliveryCountLimit || o < m.spso {
		r.state = Archived
	} else {
		r.state = Available
	}
}

func (m *model) expire(now time.Time) {
	for o, r := range m.recs {
		if r.state == Acquired && !r.deadline.After(now) {
			m.endAttempt(o, r)
		}
	}
	m.advance()
}

// validate is share-groups.md §2.5 read offset by offset.
func (m *model) validate(member string, acks []AckBatch) error {
	for i, ab := range acks {
		if ab.FirstOffset > ab.LastOffset || i > 0 && ab.FirstOffset < acks[i-1].LastOffset || len(ab.Types) == 0 ||
			len(ab.Types) > 1 && int64(len(ab.Types)) != ab.LastOffset-ab.FirstOffset+1 {
			return ErrInvalidRequest
		}
		for _, t := range ab.Types {
			if t < 0 || t > AckRenew {
				return ErrInvalidRequest
			}
		}
	}
	touched := map[int64]bool{} // offsets no longer ACQUIRED by earlier batches
	for _, ab := range acks {
		for _, t := range ab.Types {
			if t == AckRenew && !m.cfg.RenewEnabled {
				return ErrInvalidRecordState
			}
		}
		if ab.LastOffset < m.spso {
			continue // ack-below-spso: skipped, as Kafka skips it
		}
		if m.spso == m.end {
			return ErrInvalidRecordState
		}
		lo := max(ab.FirstOffset, m.spso)
		if lo >= m.end || ab.LastOffset >= m.end {
			return ErrInvalidRequest
		}
		for o := lo; o <= ab.LastOffset; o++ {
			r := m.recs[o]
			if r == nil || r.state != Acquired || r.owner != member || touched[o] {
				return ErrInvalidRecordState
			}
		}
		for o := lo; o <= ab.LastOffset; o++ {
			if ab.typeAt(o) != AckRenew {
				touched[o] = true
			}
		}
	}
	return nil
}

func (m *model) ack(member string, acks []AckBatch, now time.Time) error {
	if err := m.validate(member, acks); err != nil {
		return err
	}
	spso := m.spso
	for _, ab := range acks {
		for o := max(ab.FirstOffset, spso); o <= ab.LastOffset; o++ {
			r := m.recs[o]
			switch ab.typeAt(o) {
			case AckAccept:
				r.state, r.owner, r.deadline = Acknowledged, "", time.Time{}
			case AckReject, AckGap:
				r.state, r.owner, r.deadline = Archived, "", time.Time{}
			case AckRelease:
				m.endAttempt(o, r)
			case AckRenew:
				r.deadline = now.Add(m.cfg.LockDuration)
			}
		}
	}
	m.advance()
	return nil
}

// opSource yields the random choices: math/rand for the randomized test,
// the fuzzer's bytes for the fuzz target.
type opSource interface {
	intn(n int) int
	done() bool
}

type randSource struct {
	r    *rand.Rand
	left int
}

func (s *randSource) intn(n int) int { return s.r.IntN(n) }
func (s *randSource) done() bool     { s.left--; return s.left < 0 }

type byteSource struct{ b []byte }

func (s *byteSource) intn(n int) int {
	if len(s.b) == 0 {
		return 0
	}
	v := int(s.b[0])
	s.b = s.b[1:]
	return v % n
}
func (s *byteSource) done() bool { return len(s.b) == 0 }

var members = []string{"a", "b", "c"}

// runOps applies random operations until src is done, checking the
// implementation against the model and its invariants after each.
func runOps(t testing.TB, src opSource) {
	limit := int16(2 + src.intn(5))
	var pl persistLog
	h := newHarness(t, func(c *Config) {
		c.Persist = pl.persist
		c.DeliveryCountLimit = limit
		c.MaxRecordLocks = int64(20 + src.intn(60))
		c.ReadCommitted = src.intn(3) == 0
	})
	cfg := h.sp.Config()
	m := &model{cfg: cfg, recs: map[int64]*mrec{}, maxLimit: limit}
	var trace []string
	fail := func(format string, args ...any) {
		t.Helper()
		n := max(0, len(trace)-40)
		t.Fatalf("%s\nlast ops:\n  %s", fmt.Sprintf(format, args...), strings.Join(trace[n:], "\n  "))
	}
	logEnd, logStart := int64(0), int64(0)
	produce := func() {
		for range 1 + src.intn(6) {
			if src.intn(6) == 0 {
				logEnd += int64(1 + src.intn(3)) // a hole: compacted or never written
			}
			n := int64(1 + src.intn(8))
			h.log = append(h.log, LogBatch{BaseOffset: logEnd, LastOffset: logEnd + n - 1, Aborted: src.intn(6) == 0})
			logEnd += n
		}
	}
	produce()
	for !src.done() {
		now := h.now()
		switch op := src.intn(10); op {
		case 0:
			if src.intn(3) == 0 && len(h.log) > 1 {
				// Compaction removes a whole producer batch (never the last).
				i := src.intn(len(h.log) - 1)
				trace = append(trace, fmt.Sprintf("compact away %v", h.log[i]))
				h.log = append(h.log[:i:i], h.log[i+1:]...)
				break
			}
			produce()
			trace = append(trace, fmt.Sprintf("produce → log end %d", logEnd))
		case 1, 2, 3:
			acquireOp(h, m, src, logEnd, logStart, &trace, fail)
		case 4, 5, 6:
			member := members[src.intn(len(members))]
			var acks []AckBatch
			first := m.spso - 3 + int64(src.intn(int(m.end-m.spso)+5))
			for range 1 + src.intn(2) {
				last := first + int64(src.intn(6))
				ab := AckBatch{FirstOffset: first, LastOffset: last}
				if src.intn(3) == 0 && last-first < 8 {
					for range last - first + 1 {
						ab.Types = append(ab.Types, AckType(src.intn(5)))
					}
				} else {
					ab.Types = []AckType{AckType(src.intn(5))}
				}
				acks = append(acks, ab)
				first = last + int64(src.intn(3))
			}
			err := h.sp.Acknowledge(member, acks, now)
			want := m.ack(member, acks, now)
			trace = append(trace, fmt.Sprintf("ack %s %v → %v", member, acks, err))
			if !errors.Is(err, want) || (err == nil) != (want == nil) {
				fail("ack error %v; model %v", err, want)
			}
		case 7:
			d := time.Duration(src.intn(int(lockDur/time.Second)+10)) * time.Second
			h.clock.Advance(d)
			m.expire(h.now())
			trace = append(trace, fmt.Sprintf("advance %v", d))
		case 8:
			member := members[src.intn(len(members))]
			h.sp.ReleaseMember(member, ReasonSessionClosed, now)
			for o, r := range m.recs {
				if r.state == Acquired && r.owner == member {
					m.endAttempt(o, r)
				}
			}
			m.advance()
			trace = append(trace, "release member "+member)
		case 9:
			switch src.intn(3) {
			case 0:
				to := m.spso + int64(src.intn(int(m.end-m.spso)+4))
				h.sp.LogStartMoved(to, h.now())
				if to > m.spso {
					for o, r := range m.recs {
						if o < to && r.state == Available {
							r.state = Archived
						}
					}
					m.spso = to
					m.end = max(m.end, to)
					m.advance()
				}
				logStart = max(logStart, to)
				logEnd = max(logEnd, logStart)
				trace = append(trace, fmt.Sprintf("log start → %d", to))
			case 1:
				cfg.LockDuration = time.Duration(10+src.intn(50)) * time.Second
				cfg.RenewEnabled = src.intn(4) != 0
				if err := h.sp.SetConfig(cfg); err != nil {
					fail("set config: %v", err)
				}
				m.cfg = cfg
				trace = append(trace, fmt.Sprintf("config lock=%v renew=%v", cfg.LockDuration, cfg.RenewEnabled))
			case 2:
				// Stay within the renewal budget: just let a little time pass.
				h.clock.Advance(time.Second)
				m.expire(h.now())
				trace = append(trace, "advance 1s")
			}
		}
		if err := h.sp.CheckInvariants(); err != nil {
			fail("invariants: %v", err)
		}
		compare(h, m, fail)
	}
	// share-state-as-kafka: what was persisted loads as a new leader would.
	checkRestoreIsMove(t, h, &pl)
}

// acquireOp runs one Acquire and checks what any correct answer must
// satisfy, then makes the model follow it.
func acquireOp(h *harness, m *model, src opSource, logEnd, logStart int64, trace *[]string, fail func(string, ...any)) {
	cfg, now := m.cfg, h.now()
	limit := cfg.DeliveryCountLimit
	member := members[src.intn(len(members))]
	maxRecords := src.intn(30)
	mode := AcquireMode(src.intn(2))
	batchSize := src.intn(12)
	f := h.sp.NextFetchOffset()
	if f != m.nextFetch() {
		fail("next fetch %d; model %d", f, m.nextFetch())
	}
	read := h.read(max(f, logStart))
	inLog := func(o int64) (LogBatch, bool) {
		for _, lb := range h.log {
			if lb.BaseOffset <= o && o <= lb.LastOffset {
				return lb, true
			}
		}
		return LogBatch{}, false
	}
	got, err := h.sp.Acquire(AcquireRequest{Member: member, FetchOffset: f, Batches: read,
		MaxRecords: maxRecords, BatchSize: batchSize, Mode: mode}, now)
	*trace = append(*trace, fmt.Sprintf("acquire %s max=%d mode=%d bs=%d from %d → %v", member, maxRecords, mode, batchSize, f, got))
	if err != nil {
		fail("acquire: %v", err)
	}
	if maxRecords <= 0 || len(read) == 0 {
		if len(got) != 0 {
			fail("acquired without budget or log")
		}
		return
	}
	// Row 10, which the model can predict: AVAILABLE offsets between the
	// fetch offset and the first batch read vanished.
	for o := max(f, m.spso); o < min(read[0].BaseOffset, m.end); o++ {
		if r := m.recs[o]; r.state == Available {
			r.state = Archived
		}
	}
	m.advance()
	// An empty window jumps over a hole at its end.
	if m.spso == m.end {
		for _, lb := range read {
			if lb.LastOffset >= m.end {
				if lb.BaseOffset > m.end {
					m.spso, m.end = lb.BaseOffset, lb.BaseOffset
				}
				break
			}
		}
	}
	fetch, inFlight := m.nextFetch(), m.end-m.spso
	oldEnd := m.end
	total, prev := int64(0), int64(-1)
	alone := false
	take := func(o int64, mr *mrec) {
		if limit > 2 && mr.count >= limit-1 {
			alone = true
		}
		mr.state, mr.owner, mr.count, mr.deadline = Acquired, member, mr.count+1, now.Add(cfg.LockDuration)
		total++
	}
	for _, r := range got {
		if r.FirstOffset > r.LastOffset || r.FirstOffset <= prev {
			fail("ranges out of order: %v", got)
		}
		prev = r.LastOffset
		for o := r.FirstOffset; o <= r.LastOffset; o++ {
			mr := m.recs[o]
			if o >= m.end {
				if inFlight >= cfg.MaxRecordLocks {
					fail("new offset %d acquired with a full window", o)
				}
				mr = &mrec{state: Available}
				m.recs[o] = mr
			}
			if mr == nil || mr.state != Available || o < m.spso || o >= logEnd {
				fail("offset %d acquired from %+v", o, mr)
			}
			if lb, ok := inLog(o); ok && lb.Aborted && cfg.ReadCommitted {
				fail("aborted offset %d returned under read_committed", o)
			}
			take(o, mr)
			if mr.count != r.DeliveryCount {
				fail("offset %d count %d; range says %d", o, mr.count, r.DeliveryCount)
			}
		}
	}
	// Offsets new to the window and not returned: a hole archived to keep
	// the window contiguous, a record-limit tail (AVAILABLE, count 0), or
	// (read_committed) an aborted record acquired and archived at once.
	s := h.sp.Snapshot()
	for o := oldEnd; o < s.End; o++ {
		if m.recs[o] != nil {
			continue
		}
		lb, ok := inLog(o)
		r := stateAt(s, o)
		if r.State == 0 && o < s.SPSO {
			// Archived at once and already passed by the SPSO: a hole, or
			// an aborted record under read_committed (acquired, count 1).
			r = RangeState{State: Archived}
			if ok && lb.Aborted && cfg.ReadCommitted {
				r.DeliveryCount = 1
			}
		}
		switch {
		case !ok && r.State == Archived && r.DeliveryCount == 0:
			m.recs[o] = &mrec{state: Archived}
		case !ok && cfg.ReadCommitted && r.State == Archived && r.DeliveryCount == 1:
			// A hole inside a stretch of aborted batches goes with them.
			m.recs[o] = &mrec{state: Archived, count: 1}
			take(o, &mrec{})
		case ok && (!lb.Aborted || !cfg.ReadCommitted) && r.State == Available && r.DeliveryCount == 0:
			m.recs[o] = &mrec{state: Available}
		case ok && lb.Aborted && cfg.ReadCommitted && (r.State == Available && r.DeliveryCount == 0 || r.State == Archived && r.DeliveryCount == 1):
			m.recs[o] = &mrec{state: r.State, count: r.DeliveryCount}
			if r.State == Archived {
				take(o, &mrec{count: 0})
			}
		default:
			fail("new offset %d not returned: %+v (in log %v %+v)", o, r, ok, lb)
		}
	}
	if cfg.ReadCommitted {
		for o := m.spso; o < oldEnd; o++ {
			mr := m.recs[o]
			if lb, ok := inLog(o); ok && lb.Aborted && mr.state == Available {
				r := stateAt(s, o)
				if r.State == 0 && o < s.SPSO {
					r = RangeState{State: Archived, DeliveryCount: mr.count + 1} // passed by the SPSO
				}
				if r.State == Archived {
					if r.DeliveryCount != mr.count+1 {
						fail("aborted offset %d archived with count %d, had %d", o, r.DeliveryCount, mr.count)
					}
					take(o, mr)
					mr.state, mr.owner, mr.deadline = Archived, "", time.Time{}
				}
			}
		}
	}
	if alone && total != 1 {
		fail("a record on its last attempt shared a fetch: %v", got)
	}
	if mode == RecordLimit && total > int64(maxRecords) {
		fail("record-limit acquired %d > %d", total, maxRecords)
	}
	canAcquire := fetch < m.end || inFlight < cfg.MaxRecordLocks && logEnd > m.end
	if canAcquire != (total > 0) {
		fail("acquired %d records; model can acquire: %v (fetch %d, window [%d,%d), limit %d, log end %d, read %v, snapshot %+v)", total, canAcquire, fetch, m.spso, m.end, cfg.MaxRecordLocks, logEnd, read, s)
	}
	m.end = max(m.end, s.End)
	m.advance()
}

func compare(h *harness, m *model, fail func(string, ...any)) {
	s := h.sp.Snapshot()
	if s.SPSO != m.spso || s.End != m.end || s.NextFetchOffset != m.nextFetch() {
		fail("SPSO/end/next %d/%d/%d; model %d/%d/%d", s.SPSO, s.End, s.NextFetchOffset, m.spso, m.end, m.nextFetch())
	}
	for o := m.spso; o < m.end; o++ {
		r, mr := stateAt(s, o), m.recs[o]
		if mr == nil {
			fail("model has no offset %d", o)
		}
		if r.State != mr.state || r.Owner != mr.owner || r.DeliveryCount != mr.count || !r.LockDeadline.Equal(mr.deadline) {
			fail("offset %d: %v/%q/%d/%v; model %v/%q/%d/%v", o, r.State, r.Owner, r.DeliveryCount, r.LockDeadline,
				mr.state, mr.owner, mr.count, mr.deadline)
		}
	}
	below := 0
	for _, r := range s.Ranges {
		for o := r.FirstOffset; o <= min(r.LastOffset, m.spso-1); o++ {
			if r.State == Acquired {
				below++
				if mr := m.recs[o]; mr == nil || mr.state != Acquired || mr.owner != r.Owner {
					fail("acquired leftover %d below SPSO not in model", o)
				}
			}
		}
	}
	for o, r := range m.recs {
		if o < m.spso && r.state == Acquired {
			below--
		}
	}
	if below != 0 {
		fail("acquired leftovers below SPSO differ by %d", below)
	}
}

func TestRandomOperations(t *testing.T) {
	seeds, ops := 200, 400
	if testing.Short() {
		seeds = 20
	}
	for seed := range seeds {
		src := &randSource{r: rand.New(rand.NewPCG(uint64(seed), 7)), left: ops}
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runOps(t, src) })
	}
}

func FuzzSharePartition(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3})
	f.Add([]byte("\x03\x10\x00\x00\x05\x00\x01\x02\x07\x40\x01\x05\x01\x03\x04\x00\x00\x02"))
	r := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		b := make([]byte, 200)
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4000 {
			return
		}
		runOps(t, &byteSource{b: data})
	})
}
