package main

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// Rule gc-headroom (docs/design.md, Memory): the heap may grow by
// max(2 MiB, live/16) between GC cycles, and a small heap keeps Go's
// default of 100. (A pointer-free heap: nothing to scan.)
func TestGCPercentForBoundsHeapGrowth(t *testing.T) {
	cases := []struct {
		live uint64
		want int
	}{
		{0, 100},
		{200 << 10, 100}, // tiny: 2 MiB would be 1000%
		{2 << 20, 100},   // exactly the default
		{4 << 20, 50},    // 2 MiB of 4
		{20 << 20, 10},   // 2 MiB of 20
		{32 << 20, 6},    // 2 MiB is live/16: 6.25% rounds down
		{36 << 20, 6},    // the share benchmark's log: live/16 from here on
		{1 << 30, 6},     // a 1 GiB log grows by 64 MiB
		{1 << 40, 6},     // no overflow
	}
	for _, tc := range cases {
		if got := gcPercentFor(tc.live, 0); got != tc.want {
			t.Errorf("gcPercentFor(%d) = %d, want %d", tc.live, got, tc.want)
		}
	}
}

// Rule gc-headroom: the heap may also grow by as much as the last cycle
// scanned (pointer-ful heap, stacks, globals), so a heap of many small
// pointer-ful objects (thousands of partitions) collects per byte
// allocated in proportion to what a cycle costs; never past GOGC 100.
func TestGCPercentForFollowsScannedBytes(t *testing.T) {
	cases := []struct {
		live, scan uint64
		want       int
	}{
		{64 << 20, 0, 6},         // pointer-free: live/16
		{64 << 20, 2 << 20, 6},   // scanning less than live/16 changes nothing
		{64 << 20, 16 << 20, 25}, // a quarter of the heap to scan: grow by it
		{64 << 20, 64 << 20, 100},
		{64 << 20, 128 << 20, 100}, // stacks and globals past live: still 100
		{20 << 20, 10 << 20, 50},   // past the 2 MiB floor too
		{1 << 40, 1 << 38, 25},     // no overflow
	}
	for _, tc := range cases {
		if got := gcPercentFor(tc.live, tc.scan); got != tc.want {
			t.Errorf("gcPercentFor(%d, %d) = %d, want %d", tc.live, tc.scan, got, tc.want)
		}
	}
}

// Rule gc-headroom: after every GC cycle the CLI sets GOGC from the live
// heap that cycle found; stopping puts the default back.
func TestFollowLiveHeapSetsGOGCAfterEachCycle(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	type cycle struct {
		live, scan   uint64
		percent, set int
	}
	cycles := make(chan cycle, 16)
	stop, following := followLiveHeap(func(live, scan uint64, percent int) {
		// GOGC is read here, inside the cycle that set it: by the time
		// the test reads the report a later cycle may have set another.
		set := debug.SetGCPercent(percent)
		select {
		case cycles <- cycle{live, scan, percent, set}:
		default:
		}
	})
	defer stop()
	if !following {
		t.Fatal("with GOGC and GOMEMLIMIT unset the CLI does not follow the heap")
	}

	// 64 MiB that stays live, 16 MiB of it pointers the GC must scan:
	// the next cycles must find at least that.
	held := make([]byte, 48<<20)
	pointers := make([]*byte, (16<<20)/8)
	for i := range pointers {
		pointers[i] = &held[i%len(held)]
	}
	deadline := time.After(10 * time.Second)
	var last cycle
	for {
		runtime.GC()
		select {
		case c := <-cycles:
			// A report may come from a cycle that ran before held and
			// pointers existed (the hook runs after the cycle, on a
			// goroutine of the runtime's, and the package's other tests
			// keep a heap of their own, so live alone cannot tell).
			last = c
			if c.live < 64<<20 || c.scan < 16<<20 {
				continue
			}
			if c.percent != gcPercentFor(c.live, c.scan) {
				t.Fatalf("live %d, scan %d: set GOGC %d, want %d", c.live, c.scan, c.percent, gcPercentFor(c.live, c.scan))
			}
			// live/16 alone would be 6: the scanned pointers lift it.
			if c.percent < 20 {
				t.Fatalf("live %d, scan %d: GOGC %d, want at least 20 (headroom follows what the GC scans)", c.live, c.scan, c.percent)
			}
			if c.set != c.percent {
				t.Fatalf("GOGC is %d after the cycle, want %d", c.set, c.percent)
			}
			runtime.KeepAlive(held)
			runtime.KeepAlive(pointers)
			stop()
			if got := debug.SetGCPercent(100); got != 100 {
				t.Fatalf("GOGC after stop = %d, want 100", got)
			}
			return
		case <-deadline:
			t.Fatalf("no GC cycle reported a live heap of 64 MiB with the 16 MiB of pointers scanned within 10 s; the last: live %d, scanned %d", last.live, last.scan)
		}
	}
}

// Rule gc-headroom: a GOGC or GOMEMLIMIT the user set wins; the CLI leaves
// GC alone.
func TestFollowLiveHeapLeavesUserSettingAlone(t *testing.T) {
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv("GOGC", "")
			t.Setenv("GOMEMLIMIT", "")
			t.Setenv(env, "200")
			stop, following := followLiveHeap(func(uint64, uint64, int) {
				t.Errorf("with %s set the CLI still followed the heap", env)
			})
			defer stop()
			if following {
				t.Fatalf("with %s set the CLI follows the heap", env)
			}
		})
	}
}
