package shareserve

import (
	"slices"
	"testing"

	"github.com/sharebroker/sharebroker/sharepartition"
)

// share-groups.md §2.11 (full-window-parks): a member's fetch parks while
// the in-flight window is full and nothing in it is AVAILABLE, even though
// the log has more; only what shrinks the window or frees a record in it
// lets it acquire, and each of those wakes it at once, whoever caused it
// and on whatever connection. An append wakes it too, to find the window
// still full.
//
// The window is the benchmark's: producer batches of 1000, the default
// limit of 2000. m1 holds 0-999 unacknowledged; m2 acquired and accepted
// 1000-1999, so SPSO cannot pass m1's records and the window is full.
func TestParkedFetchOnFullWindow(t *testing.T) {
	release := []sharepartition.AckBatch{{FirstOffset: 0, LastOffset: 999, Types: []sharepartition.AckType{sharepartition.AckRelease}}}
	for _, tc := range []struct {
		name  string
		event func(t *testing.T, f *fixture, holder SessionKey)
		want  [][3]int64 // what m2's woken attempt acquires; nil: it stays parked
	}{
		{"an append finds the window still full", func(t *testing.T, f *fixture, _ SessionKey) {
			f.produce(t, 0, 1000)
		}, nil},
		{"the holder accepts: the window slides on", func(t *testing.T, f *fixture, holder SessionKey) {
			if err := f.s.acknowledgePartition(holder, f.tp(0), 1, false, accept(0, 999), f.clock.Now()); err != nil {
				t.Fatal(err)
			}
		}, [][3]int64{{2000, 2999, 1}}},
		{"the holder releases: redelivery stays inside the window", func(t *testing.T, f *fixture, holder SessionKey) {
			if err := f.s.acknowledgePartition(holder, f.tp(0), 1, false, release, f.clock.Now()); err != nil {
				t.Fatal(err)
			}
		}, [][3]int64{{0, 999, 2}}},
		{"the holder's lock expires", func(_ *testing.T, f *fixture, _ SessionKey) {
			f.clock.Advance(lockDuration)
		}, [][3]int64{{0, 999, 2}}},
		{"the holder's session closes", func(_ *testing.T, f *fixture, holder SessionKey) {
			f.s.closeSession(holder, f.clock.Now())
		}, [][3]int64{{0, 999, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 1)
			for range 3 {
				f.produce(t, 0, 1000)
			}
			m1, parts1 := f.open(t, "m1", 1)
			if got := ranges(f.fetchOnce(m1, parts1, 0, wide).Answer(f.tp(0))); !slices.Equal(got, [][3]int64{{0, 999, 1}}) {
				t.Fatalf("m1 acquired %v, want the first producer batch", got)
			}
			m2, parts2 := f.open(t, "m2", 1)
			if got := ranges(f.fetchOnce(m2, parts2, 0, wide).Answer(f.tp(0))); !slices.Equal(got, [][3]int64{{1000, 1999, 1}}) {
				t.Fatalf("m2 acquired %v, want the second producer batch", got)
			}
			if err := f.s.acknowledgePartition(m2, f.tp(0), 1, false, accept(1000, 1999), f.clock.Now()); err != nil {
				t.Fatal(err)
			}
			sp := f.s.Lookup(Key{Group: "g", TopicPartition: f.tp(0)}).Share
			if sp.InFlight() != 2000 || sp.CanAcquire() {
				t.Fatalf("window of %d records, can acquire %v; want 2000 and false", sp.InFlight(), sp.CanAcquire())
			}

			parts2, err := f.s.Sessions.advance(m2, 1, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			parked := f.s.newFetch(m2, testGroupConfig())
			parked.plan(parts2, 1, wide)
			wake := make(chan struct{}, 1)
			done, unwatch := parked.attempt(wake)
			if done {
				t.Fatalf("m2 acquired %v from a full window", ranges(parked.Answer(f.tp(0))))
			}
			select {
			case <-wake:
				t.Fatal("woken before anything happened")
			default:
			}

			tc.event(t, f, m1)
			select {
			case <-wake:
			default:
				t.Fatal("the event did not wake the parked fetch")
			}
			unwatch()
			done = attempt(parked, wake)
			if got := ranges(parked.Answer(f.tp(0))); done != (tc.want != nil) || !slices.Equal(got, tc.want) {
				t.Fatalf("the woken attempt: done %v, acquired %v; want %v", done, got, tc.want)
			}
		})
	}
}
