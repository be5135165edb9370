package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// gc-headroom (docs/design.md, Memory): how much garbage a serving broker
// may pile up between two GC cycles.
//
// Why: almost all of a loaded broker's heap is record bytes that stay as
// long as the log holds them, in large pointer-free chunks that cost the
// GC next to nothing to mark. Go's default (GOGC=100) lets the heap grow
// by its whole live size before collecting, so a broker holding 36 MB of
// chunks (22 MB of records in them) may accumulate 36 MB of short-lived
// garbage first: every request's decode, acknowledgement and fetch
// bookkeeping lands on fresh pages that stay resident. Bounding the growth
// to a few MB instead costs a cycle per few MB allocated, cheap for such a
// heap, and keeps RSS near what the log holds.
//
// A cycle is cheap only while there is little to scan, though: what it
// costs follows the pointer-ful heap, stacks and globals it marks, not the
// live heap. With thousands of partitions each cycle marks about a dozen
// pointer-ful objects per partition (log, chunk list, producer state,
// share partition, ...), so a cycle per 2 MiB made GC a quarter of the
// broker's CPU at 4096 partitions. The growth is therefore also at least
// what the last cycle scanned: GC work per byte allocated stays bounded
// whatever the partition count, while a heap of record chunks, which has
// next to nothing to scan, keeps the tight bound.
//
// gc-goal-decay: a goal falls slowly. The heap a cycle let grow is memory
// the process just had; when the next cycle finds less live (a large
// request's buffer freed, a burst over), a goal cut to the new live size
// at once makes the runtime's scavenger hand the difference back to the
// kernel (madvise and a TLB flush on every core) and the next allocations
// fault it in again, while cycles come more often for a while. So each
// cycle's goal is at least the previous goal halved for every
// gcGoalHalfLife since it was set: after a burst the heap returns to its
// tight bound within seconds of cycles rather than at the first one, and
// never grows past a goal it already had.
const (
	// gcHeadroomMin is the least a heap may grow between cycles.
	gcHeadroomMin = 2 << 20
	// gcHeadroomShift makes the growth at least live>>gcHeadroomShift
	// (1/16 of the live heap, GOGC 6), so the number of cycles per byte
	// allocated stays bounded as the log grows.
	gcHeadroomShift = 4
	// gcGoalHalfLife is how fast a previous cycle's goal stops holding
	// the next one up (gc-goal-decay).
	gcGoalHalfLife = time.Second
)

// gcPercentFor returns the GOGC that lets a heap of live bytes, whose last
// cycle scanned scan bytes (runtime/metrics /gc/scan/total:bytes: the
// pointer-ful part of the heap, stacks and globals), grow by
// max(gcHeadroomMin, live/16, scan) before the next cycle (so never less
// than 6), and never more than Go's default of 100: a small heap, or one
// that is mostly pointers, collects as it always did. A floor (a previous
// goal, decayed: gc-goal-decay) above the goal that gives raises the
// percent to reach it instead; 0 is no floor.
func gcPercentFor(live, scan, floor uint64) int {
	if live == 0 {
		return 100
	}
	headroom := max(gcHeadroomMin, live>>gcHeadroomShift, min(scan, live))
	percent := min(100, max(1, headroom*100/live))
	if floor > live+live*percent/100 {
		// Uncapped but for the int: a floor is a goal the heap had. The
		// multiplication by 100 is only done where it cannot overflow.
		if over := (floor - live) / live; over >= math.MaxInt32/100 {
			percent = math.MaxInt32
		} else {
			percent = (floor - live) * 100 / live
		}
	}
	return int(percent)
}

// heapGoal is the heap size GOGC percent gives a live heap: where the next
// cycle starts.
func heapGoal(live uint64, percent int) uint64 {
	return live + live*uint64(percent)/100
}

// decayedGoal is goal halved for every gcGoalHalfLife in elapsed
// (gc-goal-decay).
func decayedGoal(goal uint64, elapsed time.Duration) uint64 {
	if elapsed <= 0 {
		return goal
	}
	return uint64(float64(goal) * math.Exp2(-float64(elapsed)/float64(gcGoalHalfLife)))
}

// followLiveHeap sets GOGC after every GC cycle to gcPercentFor the live
// heap that cycle found, until the returned stop is called (which puts
// back Go's default). When the user chose GOGC or GOMEMLIMIT their setting
// wins: it does nothing, and returns a no-op and following false. onCycle,
// if not nil, is told what each cycle found and set (for tests).
//
// Only the CLI process calls it: GOGC is process-wide, and an embedded
// broker must not change how its host's test process collects.
func followLiveHeap(onCycle func(gcCycle)) (stop func(), following bool) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}, false
	}
	f := &heapFollower{onCycle: onCycle, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/total:bytes"}}}
	f.arm()
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if !f.stopped {
			f.stopped = true
			debug.SetGCPercent(100)
		}
	}, true
}

// gcCycle is what followLiveHeap found after a GC cycle and the GOGC it
// set from it.
type gcCycle struct {
	live, scan uint64 // the live heap, the bytes the cycle scanned
	floor      uint64 // the previous goal, decayed (gc-goal-decay)
	percent    int
}

// heapFollower is the state of followLiveHeap. Its cycle runs on a
// goroutine of the runtime's; each run arms the next.
type heapFollower struct {
	onCycle func(gcCycle)

	mu      sync.Mutex
	sample  []metrics.Sample // guarded by mu
	stopped bool             // guarded by mu
	// lastGoal is the heap goal the last cycle set, at lastGoalAt; 0
	// before the first (gc-goal-decay). Guarded by mu.
	lastGoal   uint64
	lastGoalAt time.Time
}

// gcSentinel is garbage from birth: its cleanup runs after the first GC
// cycle that finds it unreachable. It holds a pointer so that it is not
// packed into a tiny-allocator block with live neighbours.
type gcSentinel struct{ _ *byte }

func (f *heapFollower) arm() {
	runtime.AddCleanup(new(gcSentinel), (*heapFollower).cycle, f)
}

func (f *heapFollower) cycle() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	metrics.Read(f.sample)
	live := f.sample[0].Value.Uint64()
	scan := f.sample[1].Value.Uint64()
	now := time.Now()
	floor := decayedGoal(f.lastGoal, now.Sub(f.lastGoalAt))
	percent := gcPercentFor(live, scan, floor)
	debug.SetGCPercent(percent)
	f.lastGoal, f.lastGoalAt = heapGoal(live, percent), now
	if f.onCycle != nil {
		f.onCycle(gcCycle{live: live, scan: scan, floor: floor, percent: percent})
	}
	f.arm()
}
