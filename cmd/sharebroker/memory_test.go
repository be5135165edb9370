package main

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// Rule gc-headroom (docs/design.md, Memory): the heap may grow by
// max(2 MiB, live/16) between GC cycles, and a small heap keeps Go's
// default of 100.
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
		if got := gcPercentFor(tc.live); got != tc.want {
			t.Errorf("gcPercentFor(%d) = %d, want %d", tc.live, got, tc.want)
		}
	}
}

// Rule gc-headroom: after every GC cycle the CLI sets GOGC from the live
// heap that cycle found; stopping puts the default back.
func TestFollowLiveHeapSetsGOGCAfterEachCycle(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	type cycle struct {
		live    uint64
		percent int
	}
	cycles := make(chan cycle, 16)
	stop, following := followLiveHeap(func(live uint64, percent int) {
		select {
		case cycles <- cycle{live, percent}:
		default:
		}
	})
	defer stop()
	if !following {
		t.Fatal("with GOGC and GOMEMLIMIT unset the CLI does not follow the heap")
	}

	// 64 MiB that stays live: the next cycles must find at least that.
	held := make([]byte, 64<<20)
	deadline := time.After(10 * time.Second)
	for {
		runtime.GC()
		select {
		case c := <-cycles:
			if c.live < 64<<20 {
				continue // a cycle that began before held existed
			}
			if c.percent != gcPercentFor(c.live) {
				t.Fatalf("live %d: set GOGC %d, want %d", c.live, c.percent, gcPercentFor(c.live))
			}
			if got := debug.SetGCPercent(c.percent); got != c.percent {
				t.Fatalf("GOGC is %d after the cycle, want %d", got, c.percent)
			}
			runtime.KeepAlive(held)
			stop()
			if got := debug.SetGCPercent(100); got != 100 {
				t.Fatalf("GOGC after stop = %d, want 100", got)
			}
			return
		case <-deadline:
			t.Fatal("no GC cycle reported a live heap of 64 MiB within 10 s")
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
			stop, following := followLiveHeap(func(uint64, int) {
				t.Errorf("with %s set the CLI still followed the heap", env)
			})
			defer stop()
			if following {
				t.Fatalf("with %s set the CLI follows the heap", env)
			}
		})
	}
}
