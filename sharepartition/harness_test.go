package sharepartition

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const lockDur = 30 * time.Second

// harness drives one SharePartition over a fake log with a manual clock and
// checks the invariants after every step.
type harness struct {
	t       testing.TB
	clock   *locktimer.ManualClock
	timers  *locktimer.Service
	sp      *SharePartition
	ctr     *Counters
	changes atomic.Int64 // OnChange calls
	log     []LogBatch   // the fake partition log
	prev    Snapshot
}

func defaultConfig() Config {
	return Config{LockDuration: lockDur, DeliveryCountLimit: 5, MaxRecordLocks: 2000, RenewEnabled: true}
}

func newHarness(t testing.TB, mut func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, clock: locktimer.NewManualClock(epoch), ctr: new(Counters)}
	h.timers = locktimer.NewService(h.clock, nil)
	cfg := defaultConfig()
	cfg.Counters = h.ctr
	cfg.OnChange = func() { h.changes.Add(1) }
	cfg.StoryEvents = 64 // small, so the model's runs wrap the ring
	if mut != nil {
		mut(&cfg)
	}
	h.sp = New(cfg, h.timers)
	h.sp.InitializeIfNeeded(0)
	h.check()
	return h
}

// batches returns producer batches of size n covering [from, to).
func batches(from, to, n int64) []LogBatch {
	var out []LogBatch
	for b := from; b < to; b += n {
		out = append(out, LogBatch{BaseOffset: b, LastOffset: min(b+n, to) - 1})
	}
	return out
}

func (h *harness) now() time.Time { return h.clock.Now() }

// read returns the log from offset on, as the broker would read it.
func (h *harness) read(from int64) []LogBatch {
	for i, lb := range h.log {
		if lb.LastOffset >= from {
			return h.log[i:]
		}
	}
	return nil
}

func (h *harness) fetch(member string, maxRecords int, mode AcquireMode, batchSize int) []AcquiredRange {
	h.t.Helper()
	f := h.sp.NextFetchOffset()
	got, err := h.sp.Acquire(AcquireRequest{Member: member, FetchOffset: f, Batches: h.read(f),
		MaxRecords: maxRecords, BatchSize: batchSize, Mode: mode}, h.now())
	if err != nil {
		h.t.Fatalf("acquire: %v", err)
	}
	h.check()
	return got
}

func (h *harness) acquire(member string, maxRecords int) []AcquiredRange {
	h.t.Helper()
	return h.fetch(member, maxRecords, BatchOptimized, 0)
}

func (h *harness) ack(member string, first, last int64, types ...AckType) error {
	h.t.Helper()
	err := h.sp.Acknowledge(member, []AckBatch{{first, last, types}}, h.now())
	h.check()
	return err
}

func (h *harness) mustAck(member string, first, last int64, types ...AckType) {
	h.t.Helper()
	if err := h.ack(member, first, last, types...); err != nil {
		h.t.Fatalf("ack %s [%d,%d] %v: %v", member, first, last, types, err)
	}
}

func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	h.clock.Advance(d)
	h.check()
}

// check runs CheckInvariants and verifies that no terminal record still in
// the window changed state since the previous check.
func (h *harness) check() {
	h.t.Helper()
	if err := h.sp.CheckInvariants(); err != nil {
		h.t.Fatalf("invariants: %v", err)
	}
	s := h.sp.Snapshot()
	for _, r := range h.prev.Ranges {
		if !r.State.Terminal() {
			continue
		}
		for o := max(r.FirstOffset, s.SPSO); o <= r.LastOffset; o++ {
			if got := stateAt(s, o); got.State != r.State {
				h.t.Fatalf("terminal offset %d moved from %v to %v", o, r.State, got.State)
			}
		}
	}
	h.prev = s
}

// stateAt returns the range holding o in s (State 0 if untracked).
func stateAt(s Snapshot, o int64) RangeState {
	for _, r := range s.Ranges {
		if r.FirstOffset <= o && o <= r.LastOffset {
			return r
		}
	}
	return RangeState{}
}

func (h *harness) at(o int64) RangeState { return stateAt(h.sp.Snapshot(), o) }

// expect checks state, owner and delivery count of every offset in
// [first, last].
func (h *harness) expect(first, last int64, st State, owner string, count int16) {
	h.t.Helper()
	s := h.sp.Snapshot()
	for o := first; o <= last; o++ {
		r := stateAt(s, o)
		if r.State != st || r.Owner != owner || r.DeliveryCount != count {
			h.t.Fatalf("offset %d: %v owner %q count %d; want %v owner %q count %d",
				o, r.State, r.Owner, r.DeliveryCount, st, owner, count)
		}
	}
}

func (h *harness) expectSPSO(spso, end int64) {
	h.t.Helper()
	s := h.sp.Snapshot()
	if s.SPSO != spso || s.End != end {
		h.t.Fatalf("SPSO %d end %d; want %d %d", s.SPSO, s.End, spso, end)
	}
}

func ranges(rs ...int64) []AcquiredRange {
	var out []AcquiredRange
	for i := 0; i+2 < len(rs); i += 3 {
		out = append(out, AcquiredRange{rs[i], rs[i+1], int16(rs[i+2])})
	}
	return out
}

func expectRanges(t testing.TB, got []AcquiredRange, want ...int64) {
	t.Helper()
	w := ranges(want...)
	if len(got) != len(w) {
		t.Fatalf("acquired %v; want %v", got, w)
	}
	for i := range got {
		if got[i] != w[i] {
			t.Fatalf("acquired %v; want %v", got, w)
		}
	}
}

func expectErr(t testing.TB, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v; want %v", err, want)
	}
}
