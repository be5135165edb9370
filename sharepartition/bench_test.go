package sharepartition

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
)

func benchPartition(b *testing.B, maxLocks int64) (*SharePartition, *locktimer.ManualClock) {
	clock := locktimer.NewManualClock(epoch)
	cfg := defaultConfig()
	cfg.MaxRecordLocks = maxLocks
	cfg.StoryEvents = 4096 // sharebroker.record.story.events' default: the broker's hot path
	sp := New(cfg, locktimer.NewService(clock, nil))
	sp.InitializeIfNeeded(0)
	return sp, clock
}

// BenchmarkAcquireAccept measures one 500-record producer batch acquired
// and accepted whole, the common path; ns/record is the figure to watch.
func BenchmarkAcquireAccept(b *testing.B) {
	const n = 500
	sp, clock := benchPartition(b, 2000)
	acks := []AckBatch{{Types: []AckType{AckAccept}}}
	lbs := make([]LogBatch, 1)
	b.ReportAllocs()
	for b.Loop() {
		f := sp.NextFetchOffset()
		lbs[0] = LogBatch{BaseOffset: f, LastOffset: f + n - 1}
		got, err := sp.Acquire(AcquireRequest{Member: "m", FetchOffset: f, Batches: lbs, MaxRecords: n}, clock.Now())
		if err != nil || len(got) != 1 {
			b.Fatalf("acquire: %v %v", got, err)
		}
		acks[0].FirstOffset, acks[0].LastOffset = got[0].FirstOffset, got[0].LastOffset
		if err := sp.Acknowledge("m", acks, clock.Now()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
}

// BenchmarkAcquireAcceptPerOffset acknowledges each record with its own
// type (forcing per-offset state), the worst case for one batch.
func BenchmarkAcquireAcceptPerOffset(b *testing.B) {
	const n = 500
	sp, clock := benchPartition(b, 2000)
	types := make([]AckType, n)
	for i := range types {
		types[i] = AckAccept
	}
	acks := []AckBatch{{Types: types}}
	lbs := make([]LogBatch, 1)
	b.ReportAllocs()
	for b.Loop() {
		f := sp.NextFetchOffset()
		lbs[0] = LogBatch{BaseOffset: f, LastOffset: f + n - 1}
		got, err := sp.Acquire(AcquireRequest{Member: "m", FetchOffset: f, Batches: lbs, MaxRecords: n}, clock.Now())
		if err != nil || len(got) != 1 {
			b.Fatalf("acquire: %v %v", got, err)
		}
		acks[0].FirstOffset, acks[0].LastOffset = got[0].FirstOffset, got[0].LastOffset
		if err := sp.Acknowledge("m", acks, clock.Now()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
}

// BenchmarkRenew renews one 500-record batch lock.
func BenchmarkRenew(b *testing.B) {
	sp, clock := benchPartition(b, 2000)
	lbs := []LogBatch{{BaseOffset: 0, LastOffset: 499}}
	if _, err := sp.Acquire(AcquireRequest{Member: "m", Batches: lbs, MaxRecords: 500}, clock.Now()); err != nil {
		b.Fatal(err)
	}
	acks := []AckBatch{{0, 499, []AckType{AckRenew}}}
	b.ReportAllocs()
	for b.Loop() {
		if err := sp.Acknowledge("m", acks, clock.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMemoryInFlight holds 200k records in flight in 500-record
// batches and reports heap bytes per in-flight record, whole and split.
func BenchmarkMemoryInFlight(b *testing.B) {
	const records, batch = 200_000, 500
	for _, split := range []bool{false, true} {
		name := "whole"
		if split {
			name = "split"
		}
		b.Run(name, func(b *testing.B) {
			var perRecord float64
			for b.Loop() {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				sp, clock := benchPartition(b, records)
				for f := int64(0); f < records; f += batch {
					lbs := []LogBatch{{BaseOffset: f, LastOffset: f + batch - 1}}
					if _, err := sp.Acquire(AcquireRequest{Member: "m", FetchOffset: f, Batches: lbs, MaxRecords: batch}, clock.Now()); err != nil {
						b.Fatal(err)
					}
					if split { // renewing one offset splits the batch
						if err := sp.Acknowledge("m", []AckBatch{{f, f, []AckType{AckRenew}}}, clock.Now()); err != nil {
							b.Fatal(err)
						}
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				if sp.InFlight() != records {
					b.Fatalf("in flight %d", sp.InFlight())
				}
				perRecord = float64(after.HeapAlloc-before.HeapAlloc) / records
				runtime.KeepAlive(sp)
				clock.Advance(time.Hour) // let the locks go
			}
			b.ReportMetric(perRecord, "B/record")
		})
	}
}

// BenchmarkStoryRingMillion (record-story-bound) acquires and accepts one
// record a million times on one partition, each at its own instant so no
// event continues another, and reports the heap in use before and after
// (after a warm-up that fills the ring), and bytes and allocations per
// acquire+accept: the ring keeps memory flat.
func BenchmarkStoryRingMillion(b *testing.B) {
	for _, events := range []int{4096, 0} {
		b.Run(fmt.Sprintf("events=%d", events), func(b *testing.B) { benchStoryRing(b, events) })
	}
}

func benchStoryRing(b *testing.B, events int) {
	const rounds, warmup = 1_000_000, 10_000
	for b.Loop() {
		sp, clock := benchPartition(b, 2000)
		sp.SetConfig(func() Config { c := sp.Config(); c.StoryEvents = events; return c }())
		now := clock.Now()
		acks := []AckBatch{{Types: []AckType{AckAccept}}}
		lbs := make([]LogBatch, 1)
		var before, after runtime.MemStats
		for i := range rounds {
			if i == warmup {
				runtime.GC()
				runtime.ReadMemStats(&before)
			}
			now = now.Add(time.Microsecond)
			f := sp.NextFetchOffset()
			lbs[0] = LogBatch{BaseOffset: f, LastOffset: f}
			got, err := sp.Acquire(AcquireRequest{Member: "m", FetchOffset: f, Batches: lbs, MaxRecords: 1}, now)
			if err != nil || len(got) != 1 {
				b.Fatalf("acquire: %v %v", got, err)
			}
			acks[0].FirstOffset, acks[0].LastOffset = f, f
			if err := sp.Acknowledge("m", acks, now); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if n := len(sp.story.buf); n != events {
			b.Fatalf("ring holds %d events", n)
		}
		b.ReportMetric(float64(before.HeapInuse), "heap-inuse-before")
		b.ReportMetric(float64(after.HeapInuse), "heap-inuse-after")
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/(rounds-warmup), "B/round")
		b.ReportMetric(float64(after.Mallocs-before.Mallocs)/(rounds-warmup), "allocs/round")
		runtime.KeepAlive(sp)
	}
}
