package locktimer

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestServiceFiresInOrderNeverEarly(t *testing.T) {
	c := NewManualClock(epoch)
	s := NewService(c, nil)
	var fired []int
	for _, ms := range []int{30, 10, 20} {
		s.Schedule(epoch.Add(time.Duration(ms)*time.Millisecond), func() {
			if c.Now().Before(epoch.Add(time.Duration(ms) * time.Millisecond)) {
				t.Errorf("timer %d ms fired early at %v", ms, c.Now().Sub(epoch))
			}
			fired = append(fired, ms)
		})
	}
	c.Advance(19 * time.Millisecond)
	if !slices.Equal(fired, []int{10}) {
		t.Fatalf("after 19 ms fired %v, want [10]", fired)
	}
	c.Advance(11 * time.Millisecond)
	if !slices.Equal(fired, []int{10, 20, 30}) {
		t.Fatalf("after 30 ms fired %v, want [10 20 30]", fired)
	}
	if s.Len() != 0 {
		t.Fatalf("%d timers left", s.Len())
	}
}

func TestServiceResetAndCancel(t *testing.T) {
	c := NewManualClock(epoch)
	s := NewService(c, nil)
	count := 0
	h := s.Schedule(epoch.Add(10*time.Millisecond), func() { count++ })
	// RENEW-like: push the deadline out before it fires.
	c.Advance(5 * time.Millisecond)
	s.Reset(h, c.Now().Add(10*time.Millisecond))
	c.Advance(9 * time.Millisecond) // 14 ms: the old deadline passed
	if count != 0 {
		t.Fatal("fired at its old deadline after Reset")
	}
	c.Advance(time.Millisecond) // 15 ms
	if count != 1 {
		t.Fatalf("fired %d times at the new deadline, want 1", count)
	}
	// Reset after firing schedules again.
	s.Reset(h, c.Now().Add(time.Millisecond))
	c.Advance(time.Millisecond)
	if count != 2 {
		t.Fatalf("re-armed timer fired %d times in all, want 2", count)
	}
	// Cancel before the deadline: never fires; a second Cancel says so.
	s.Reset(h, c.Now().Add(time.Millisecond))
	if !s.Cancel(h) {
		t.Fatal("Cancel of a pending timer reported false")
	}
	if s.Cancel(h) {
		t.Fatal("second Cancel reported true")
	}
	c.Advance(time.Second)
	if count != 2 {
		t.Fatal("cancelled timer fired")
	}
	// Moving a deadline earlier re-arms the clock for it.
	late := s.Schedule(c.Now().Add(time.Hour), func() { count++ })
	s.Reset(late, c.Now().Add(time.Millisecond))
	c.Advance(time.Millisecond)
	if count != 3 {
		t.Fatal("timer moved earlier did not fire at its new deadline")
	}
}

func TestServiceCallbackMayRescheduleItself(t *testing.T) {
	c := NewManualClock(epoch)
	s := NewService(c, nil)
	var h *Handle
	fires := 0
	h = s.Schedule(epoch.Add(10*time.Millisecond), func() {
		fires++
		if fires < 3 {
			s.Reset(h, c.Now().Add(10*time.Millisecond))
		}
	})
	c.Advance(100 * time.Millisecond)
	if fires != 3 {
		t.Fatalf("self-rescheduling timer fired %d times within 100 ms, want 3", fires)
	}
}

func TestServiceReportsLateness(t *testing.T) {
	c := NewManualClock(epoch)
	var lateness []time.Duration
	s := NewService(c, func(late time.Duration) { lateness = append(lateness, late) })
	s.Schedule(epoch.Add(10*time.Millisecond), func() {})
	c.Advance(10 * time.Millisecond)
	if !slices.Equal(lateness, []time.Duration{0}) {
		t.Fatalf("lateness %v, want [0] with the manual clock", lateness)
	}
}

func TestServiceClose(t *testing.T) {
	c := NewManualClock(epoch)
	s := NewService(c, nil)
	fired := false
	s.Schedule(epoch.Add(time.Millisecond), func() { fired = true })
	s.Close()
	s.Schedule(epoch.Add(time.Millisecond), func() { fired = true })
	c.Advance(time.Second)
	if fired || s.Len() != 0 || c.Pending() != 0 {
		t.Fatalf("after Close: fired=%v len=%d clock pending=%d", fired, s.Len(), c.Pending())
	}
}

// A random mix of schedule, reset, cancel and advance, checked against a
// plain map of deadlines: every timer fires exactly when the model says,
// never early, never twice, and the heap stays a heap.
func TestServiceRandomAgainstModel(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		c := NewManualClock(epoch)
		s := NewService(c, nil)
		model := map[int]time.Time{} // pending timer -> deadline
		handles := map[int]*Handle{}
		firedAt := map[int]time.Time{}
		for op := range 2000 {
			switch rng.IntN(4) {
			case 0:
				id := op
				d := c.Now().Add(time.Duration(rng.IntN(100)) * time.Millisecond)
				handles[id] = s.Schedule(d, func() {
					if _, twice := firedAt[id]; twice {
						t.Fatalf("seed %d: timer %d fired twice", seed, id)
					}
					firedAt[id] = c.Now()
				})
				model[id] = d
			case 1:
				for id, h := range handles {
					d := c.Now().Add(time.Duration(rng.IntN(100)) * time.Millisecond)
					s.Reset(h, d)
					delete(firedAt, id)
					model[id] = d
					break
				}
			case 2:
				for id, h := range handles {
					_, pending := model[id]
					if got := s.Cancel(h); got != pending {
						t.Fatalf("seed %d: Cancel(%d) = %v, model pending %v", seed, id, got, pending)
					}
					delete(model, id)
					delete(handles, id)
					break
				}
			case 3:
				c.Advance(time.Duration(rng.IntN(30)) * time.Millisecond)
				now := c.Now()
				for id, d := range model {
					if !d.After(now) {
						at, ok := firedAt[id]
						if !ok {
							t.Fatalf("seed %d: timer %d due at %v not fired by %v", seed, id, d.Sub(epoch), now.Sub(epoch))
						}
						if !at.Equal(d) {
							t.Fatalf("seed %d: timer %d due at %v fired at %v", seed, id, d.Sub(epoch), at.Sub(epoch))
						}
						delete(model, id)
					} else if _, ok := firedAt[id]; ok {
						t.Fatalf("seed %d: timer %d due at %v fired early (now %v)", seed, id, d.Sub(epoch), now.Sub(epoch))
					}
				}
			}
			checkHeap(t, s)
			if s.Len() != len(model) {
				t.Fatalf("seed %d: service holds %d timers, model %d", seed, s.Len(), len(model))
			}
		}
	}
}

func checkHeap(t *testing.T, s *Service) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, h := range s.heap {
		if int(h.index) != i {
			t.Fatalf("heap[%d] thinks it is at %d", i, h.index)
		}
		if i > 0 && s.heap[(i-1)/4].deadline > h.deadline {
			t.Fatalf("heap order broken at %d", i)
		}
	}
}

func TestServiceRealClock(t *testing.T) {
	s := NewService(RealClock{}, nil)
	defer s.Close()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var early []time.Duration
	for i := range 50 {
		wg.Add(1)
		deadline := time.Now().Add(time.Duration(i%5) * time.Millisecond)
		s.Schedule(deadline, func() {
			defer wg.Done()
			if now := time.Now(); now.Before(deadline) {
				mu.Lock()
				early = append(early, deadline.Sub(now))
				mu.Unlock()
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("real-clock timers did not all fire within 10 s")
	}
	if len(early) > 0 {
		t.Fatalf("%d timers fired early: %v", len(early), early)
	}
}

// Benchmarks with 1,000,000 live timers, as the share path may hold.
const liveTimers = 1_000_000

func loadedService(b *testing.B) (*Service, []*Handle, *ManualClock) {
	c := NewManualClock(epoch)
	s := NewService(c, nil)
	hs := make([]*Handle, liveTimers)
	rng := rand.New(rand.NewPCG(1, 2))
	fn := func() {}
	for i := range hs {
		hs[i] = s.Schedule(epoch.Add(time.Minute+time.Duration(rng.IntN(30_000))*time.Millisecond), fn)
	}
	return s, hs, c
}

func BenchmarkSchedule(b *testing.B) {
	s, _, _ := loadedService(b)
	fn := func() {}
	rng := rand.New(rand.NewPCG(3, 4))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		h := s.Schedule(epoch.Add(time.Minute+time.Duration(rng.IntN(30_000))*time.Millisecond), fn)
		s.Cancel(h) // keep the live count at one million
	}
}

func BenchmarkReset(b *testing.B) {
	s, hs, _ := loadedService(b)
	rng := rand.New(rand.NewPCG(5, 6))
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		s.Reset(hs[i%liveTimers], epoch.Add(time.Minute+time.Duration(rng.IntN(30_000))*time.Millisecond))
		i++
	}
}

func BenchmarkCancel(b *testing.B) {
	s, _, _ := loadedService(b)
	// Cancel b.N timers scheduled on top of the million, so at least a
	// million stay live throughout and nothing untimed runs in the loop.
	rng := rand.New(rand.NewPCG(7, 8))
	fn := func() {}
	extra := make([]*Handle, b.N)
	for i := range extra {
		extra[i] = s.Schedule(epoch.Add(time.Minute+time.Duration(rng.IntN(30_000))*time.Millisecond), fn)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Cancel(extra[i])
	}
}

// BenchmarkMemoryPerTimer reports the heap bytes one live timer costs,
// handle and heap slot together (the caller's callback not included). The
// measurement is taken once; the loop only satisfies the benchmark driver.
func BenchmarkMemoryPerTimer(b *testing.B) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s, hs, _ := loadedService(b)
	runtime.GC()
	runtime.ReadMemStats(&after)
	perTimer := float64(after.HeapAlloc-before.HeapAlloc) / liveTimers
	for b.Loop() {
	}
	b.ReportMetric(perTimer, "bytes/timer")
	runtime.KeepAlive(hs)
	runtime.KeepAlive(s)
}
