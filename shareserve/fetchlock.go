package shareserve

import (
	"sync/atomic"
	"time"
)

// Kafka takes a share partition's fetch lock for each pass a delayed share
// fetch makes over it (SharePartition.maybeAcquireFetchLock and
// releaseFetchLock), and reports how long it held it (FetchLockTimeMs)
// and what share of the time since the previous release it was held
// (FetchLockRatio). We have no fetch lock: a pass is one acquireFrom, and
// two fetches may make passes over one share partition at once, each
// taking the partition's mutex only for its own change. We time each pass
// the same way, in real time (it measures our work, not the broker clock),
// so the figures mean what Kafka's mean: how busy a share partition is
// with fetches.

// FetchLockTimeBounds are the upper bounds, in seconds, of the fetch lock
// time histogram: 10 µs to 0.65 s, by factors of 4.
var FetchLockTimeBounds = [...]float64{1e-5, 4e-5, 1.6e-4, 6.4e-4, 2.56e-3, 1.024e-2, 4.096e-2, 0.16384, 0.65536}

// FetchLockRatioBounds are the upper bounds of the fetch lock ratio
// histogram, tenths of 1.
var FetchLockRatioBounds = [...]float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}

// FetchLock holds one share partition's fetch pass figures. Its fields are
// atomic: passes record into it concurrently, scrapes read it. Counts are
// per bucket, not cumulative; the last slot of each counts what lies above
// the last bound.
type FetchLock struct {
	timeBuckets  [len(FetchLockTimeBounds) + 1]atomic.Uint64
	timeSumNanos atomic.Int64
	ratioBuckets [len(FetchLockRatioBounds) + 1]atomic.Uint64
	// ratioSumMicros is the sum of the ratios in millionths, so it can be
	// an integer added atomically.
	ratioSumMicros atomic.Int64
	// releasedNanos is when the last pass ended, Unix ns; 0 before the first.
	releasedNanos atomic.Int64
}

// FetchLockSnapshot is a FetchLock as read at one moment.
type FetchLockSnapshot struct {
	Passes       uint64
	TimeBuckets  [len(FetchLockTimeBounds) + 1]uint64
	TimeSum      time.Duration
	RatioBuckets [len(FetchLockRatioBounds) + 1]uint64
	RatioSum     float64
	RatioSamples uint64
}

// pass records one pass that started at start and ended at end. The ratio
// is the time held over the time since the previous pass ended; a first
// pass, or one that overlapped another, counts as held throughout (1), as
// Kafka's ratio is 1 when nothing was idle.
func (l *FetchLock) pass(start, end time.Time) {
	held := end.Sub(start)
	l.timeBuckets[bucket(FetchLockTimeBounds[:], held.Seconds())].Add(1)
	l.timeSumNanos.Add(int64(held))
	ratio := 1.0
	if prev := l.releasedNanos.Swap(end.UnixNano()); prev != 0 {
		if idle := start.UnixNano() - prev; idle > 0 && held+time.Duration(idle) > 0 {
			ratio = float64(held) / float64(held+time.Duration(idle))
		}
	}
	l.ratioBuckets[bucket(FetchLockRatioBounds[:], ratio)].Add(1)
	l.ratioSumMicros.Add(int64(ratio * 1e6))
}

// bucket is the index of the first bound v does not exceed, or len(bounds).
func bucket(bounds []float64, v float64) int {
	for i, b := range bounds {
		if v <= b {
			return i
		}
	}
	return len(bounds)
}

// Snapshot reads the figures. Buckets are read one by one while passes
// may still record, so a scrape may see a pass in one histogram and not
// yet in the other: each histogram is consistent with its own count.
func (l *FetchLock) Snapshot() FetchLockSnapshot {
	var s FetchLockSnapshot
	for i := range l.timeBuckets {
		s.TimeBuckets[i] = l.timeBuckets[i].Load()
		s.Passes += s.TimeBuckets[i]
	}
	s.TimeSum = time.Duration(l.timeSumNanos.Load())
	for i := range l.ratioBuckets {
		s.RatioBuckets[i] = l.ratioBuckets[i].Load()
		s.RatioSamples += s.RatioBuckets[i]
	}
	s.RatioSum = float64(l.ratioSumMicros.Load()) / 1e6
	return s
}
