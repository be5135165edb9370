package main

import (
	"fmt"
	"math"
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
		if got := gcPercentFor(tc.live, 0, 0); got != tc.want {
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
		if got := gcPercentFor(tc.live, tc.scan, 0); got != tc.want {
			t.Errorf("gcPercentFor(%d, %d) = %d, want %d", tc.live, tc.scan, got, tc.want)
		}
	}
}

// Rule gc-goal-decay: a previous goal, decayed, holds the next goal up:
// the percent reaches the floor when the headroom alone would not, and a
// floor below the headroom's goal changes nothing.
func TestGCPercentForKeepsDecayedGoal(t *testing.T) {
	cases := []struct {
		live, scan, floor uint64
		want              int
	}{
		{64 << 20, 0, 0, 6},           // no floor: live/16
		{64 << 20, 0, 66 << 20, 6},    // under live+live/16: nothing changes
		{27 << 20, 0, 49 << 20, 81},   // a freed 22 MB request buffer is kept for now
		{64 << 20, 0, 128 << 20, 100}, // past Go's default cap of 100: a goal it had
		{1 << 20, 0, 64 << 20, 6300},  // a small heap under a large past goal
		{0, 0, 64 << 20, 100},         // nothing live: the default
		{1, 0, 1 << 62, math.MaxInt32},
		{1, 0, 184467440737095518, math.MaxInt32}, // (floor-live)*100 wraps to 84 in uint64
		{1 << 10, 0, 1<<10 + 1<<30, 104857600},    // large, exact
		{1 << 10, 0, 1 << 40, math.MaxInt32},      // past the int's range
	}
	for _, tc := range cases {
		if got := gcPercentFor(tc.live, tc.scan, tc.floor); got != tc.want {
			t.Errorf("gcPercentFor(%d, %d, %d) = %d, want %d", tc.live, tc.scan, tc.floor, got, tc.want)
		}
		if tc.live > 0 && tc.floor > 0 && tc.want < math.MaxInt32 {
			// The goal reached is the floor, to within the percent's rounding.
			if goal := heapGoal(tc.live, tc.want); goal > max(tc.floor, heapGoal(tc.live, gcPercentFor(tc.live, tc.scan, 0))) {
				t.Errorf("live %d, floor %d: goal %d above the floor", tc.live, tc.floor, goal)
			}
		}
	}
}

// Rule gc-goal-decay: the floor halves every gcGoalHalfLife.
func TestDecayedGoalHalvesEachHalfLife(t *testing.T) {
	const goal = 64 << 20
	cases := []struct {
		elapsed time.Duration
		want    uint64
	}{
		{-time.Second, goal}, // a clock that went back: no decay
		{0, goal},
		{gcGoalHalfLife, goal / 2},
		{2 * gcGoalHalfLife, goal / 4},
		{gcGoalHalfLife / 2, 47453132}, // goal / sqrt(2)
		{time.Minute, 0},
	}
	for _, tc := range cases {
		if got := decayedGoal(goal, tc.elapsed); got != tc.want {
			t.Errorf("decayedGoal(%d, %v) = %d, want %d", uint64(goal), tc.elapsed, got, tc.want)
		}
	}
}

// Rule gc-headroom: after every GC cycle the CLI sets GOGC from the live
// heap that cycle found; stopping puts the default back. Rule
// gc-goal-decay: each cycle's floor is the goal the cycle before set,
// decayed, never more.
func TestFollowLiveHeapSetsGOGCAfterEachCycle(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	type cycle struct {
		gcCycle
		set        int
		floorError string // a floor that is not the previous goal decayed
	}
	cycles := make(chan cycle, 16)
	var prev *gcCycle // only touched by the callback, which cycles run one at a time
	stop, following := followLiveHeap(func(c gcCycle) {
		// GOGC is read here, inside the cycle that set it: by the time
		// the test reads the report a later cycle may have set another.
		set := debug.SetGCPercent(c.percent)
		var floorError string
		if prev != nil {
			if last := heapGoal(prev.live, prev.percent); c.floor == 0 || c.floor > last {
				floorError = fmt.Sprintf("floor %d after a cycle that set goal %d", c.floor, last)
			}
		}
		prev = &c
		select {
		case cycles <- cycle{c, set, floorError}:
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
			if c.floorError != "" {
				t.Fatal(c.floorError)
			}
			if c.live < 64<<20 || c.scan < 16<<20 {
				continue
			}
			if want := gcPercentFor(c.live, c.scan, c.floor); c.percent != want {
				t.Fatalf("live %d, scan %d, floor %d: set GOGC %d, want %d", c.live, c.scan, c.floor, c.percent, want)
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
			stop, following := followLiveHeap(func(gcCycle) {
				t.Errorf("with %s set the CLI still followed the heap", env)
			})
			defer stop()
			if following {
				t.Fatalf("with %s set the CLI follows the heap", env)
			}
		})
	}
}
