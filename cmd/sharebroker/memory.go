package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
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
const (
	// gcHeadroomMin is the least a heap may grow between cycles.
	gcHeadroomMin = 2 << 20
	// gcHeadroomShift makes the growth at least live>>gcHeadroomShift
	// (1/16 of the live heap, GOGC 6), so the number of cycles per byte
	// allocated stays bounded as the log grows.
	gcHeadroomShift = 4
)

// gcPercentFor returns the GOGC that lets a heap of live bytes grow by
// max(gcHeadroomMin, live/16) before the next cycle (so never less than 6),
// and never more than Go's default of 100: a small heap collects as it
// always did.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return 100
	}
	headroom := max(gcHeadroomMin, live>>gcHeadroomShift)
	return int(min(100, max(1, headroom*100/live)))
}

// followLiveHeap sets GOGC after every GC cycle to gcPercentFor the live
// heap that cycle found, until the returned stop is called (which puts
// back Go's default). When the user chose GOGC or GOMEMLIMIT their setting
// wins: it does nothing, and returns a no-op and following false. onCycle,
// if not nil, is told each live heap and the percent set (for tests).
//
// Only the CLI process calls it: GOGC is process-wide, and an embedded
// broker must not change how its host's test process collects.
func followLiveHeap(onCycle func(live uint64, percent int)) (stop func(), following bool) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}, false
	}
	f := &heapFollower{onCycle: onCycle, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
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

// heapFollower is the state of followLiveHeap. Its cycle runs on a
// goroutine of the runtime's; each run arms the next.
type heapFollower struct {
	onCycle func(live uint64, percent int)

	mu      sync.Mutex
	sample  []metrics.Sample // guarded by mu
	stopped bool             // guarded by mu
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
	percent := gcPercentFor(live)
	debug.SetGCPercent(percent)
	if f.onCycle != nil {
		f.onCycle(live, percent)
	}
	f.arm()
}
