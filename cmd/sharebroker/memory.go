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
const (
	// gcHeadroomMin is the least a heap may grow between cycles.
	gcHeadroomMin = 2 << 20
	// gcHeadroomShift makes the growth at least live>>gcHeadroomShift
	// (1/16 of the live heap, GOGC 6), so the number of cycles per byte
	// allocated stays bounded as the log grows.
	gcHeadroomShift = 4
)

// gcPercentFor returns the GOGC that lets a heap of live bytes, whose last
// cycle scanned scan bytes (runtime/metrics /gc/scan/total:bytes: the
// pointer-ful part of the heap, stacks and globals), grow by
// max(gcHeadroomMin, live/16, scan) before the next cycle (so never less
// than 6), and never more than Go's default of 100: a small heap, or one
// that is mostly pointers, collects as it always did.
func gcPercentFor(live, scan uint64) int {
	if live == 0 {
		return 100
	}
	headroom := max(gcHeadroomMin, live>>gcHeadroomShift, min(scan, live))
	return int(min(100, max(1, headroom*100/live)))
}

// followLiveHeap sets GOGC after every GC cycle to gcPercentFor the live
// heap that cycle found, until the returned stop is called (which puts
// back Go's default). When the user chose GOGC or GOMEMLIMIT their setting
// wins: it does nothing, and returns a no-op and following false. onCycle,
// if not nil, is told each live heap, scanned bytes and the percent set
// (for tests).
//
// Only the CLI process calls it: GOGC is process-wide, and an embedded
// broker must not change how its host's test process collects.
func followLiveHeap(onCycle func(live, scan uint64, percent int)) (stop func(), following bool) {
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

// heapFollower is the state of followLiveHeap. Its cycle runs on a
// goroutine of the runtime's; each run arms the next.
type heapFollower struct {
	onCycle func(live, scan uint64, percent int)

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
	scan := f.sample[1].Value.Uint64()
	percent := gcPercentFor(live, scan)
	debug.SetGCPercent(percent)
	if f.onCycle != nil {
		f.onCycle(live, scan, percent)
	}
	f.arm()
}
