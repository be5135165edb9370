package shareserve

import (
	"testing"
	"time"
)

// Three passes: the first counts as held throughout; the second held 1 ms
// of the 4 ms since the first ended; the third began before the second
// ended (two fetches at once), so it too counts as held throughout.
func TestFetchLockPasses(t *testing.T) {
	var l FetchLock
	t0 := time.Unix(1_700_000_000, 0)
	ms := time.Millisecond
	l.pass(t0, t0.Add(2*ms))                            // held 2 ms: bucket 2.56e-3
	l.pass(t0.Add(5*ms), t0.Add(6*ms))                  // held 1 ms, idle 3 ms: ratio 0.25
	l.pass(t0.Add(5500*time.Microsecond), t0.Add(7*ms)) // overlaps: ratio 1
	s := l.Snapshot()
	if s.Passes != 3 || s.RatioSamples != 3 {
		t.Fatalf("passes %d, ratio samples %d, want 3 and 3", s.Passes, s.RatioSamples)
	}
	if want := 4500 * time.Microsecond; s.TimeSum != want {
		t.Errorf("time sum %v, want %v", s.TimeSum, want)
	}
	if s.TimeBuckets[4] != 3 { // 1, 1.5 and 2 ms: all above 0.64 ms, within 2.56 ms
		t.Errorf("time buckets %v, want all three in the fifth", s.TimeBuckets)
	}
	if s.RatioBuckets[2] != 1 || s.RatioBuckets[9] != 2 || s.RatioSum != 2.25 {
		t.Errorf("ratio buckets %v sum %v, want one at 0.3, two at 1, sum 2.25", s.RatioBuckets, s.RatioSum)
	}
}

// A pass costs atomic adds: nothing is allocated on the fetch path.
func TestFetchLockPassDoesNotAllocate(t *testing.T) {
	var l FetchLock
	start := time.Now()
	end := start.Add(time.Millisecond)
	if allocs := testing.AllocsPerRun(100, func() { l.pass(start, end) }); allocs != 0 {
		t.Fatalf("%v allocations per pass, want 0", allocs)
	}
}
