package fetchsession

import (
	"errors"
	"math"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func part(name string, p int32, offset int64) Requested {
	return Requested{Key: Key{Name: name, Partition: p}, Params: Params{FetchOffset: offset, LogStartOffset: -1, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1}}
}

// quiet is what a partition with nothing new answers: no records, the
// offsets given.
func quiet(hw int64) Answer { return Answer{HighWatermark: hw, LogStartOffset: 0} }

// open makes a session of n partitions of topic "t", each answered with
// high watermark 10, and returns its ID.
func open(t *testing.T, c *Cache, now time.Time, n int) int32 {
	t.Helper()
	var parts []Requested
	for i := range n {
		parts = append(parts, part("t", int32(i), 0))
	}
	x := c.NewContext(now, Request{Version: 12, Epoch: InitialEpoch, Partitions: parts})
	answers := make([]Answer, n)
	for i := range answers {
		answers[i] = quiet(10)
	}
	id, keep, err := x.Finish(now, answers)
	if err != nil || keep != nil {
		t.Fatalf("full fetch: id %d keep %v err %v", id, keep, err)
	}
	return id
}

// TestNextEpoch checks FetchMetadata.nextEpoch's wrap (rule
// fetch-session-epochs): after the largest epoch comes 1, and a final
// epoch stays final.
func TestNextEpoch(t *testing.T) {
	for in, want := range map[int32]int32{0: 1, 1: 2, math.MaxInt32: 1, -1: -1, -5: -1} {
		if got := NextEpoch(in); got != want {
			t.Errorf("NextEpoch(%d) = %d, want %d", in, got, want)
		}
	}
}

// TestFetchSessionEpochs walks rule fetch-session-epochs: epoch 0 creates,
// the next request must carry epoch 1, a repeat of it or a skip fails, an
// unknown ID fails, names after IDs fail, and epoch -1 closes.
func TestFetchSessionEpochs(t *testing.T) {
	c := NewCache(DefaultSlots)
	id := open(t, c, t0, 2)
	if id == NoSession {
		t.Fatal("no session created")
	}
	if x := c.NewContext(t0, Request{Version: 12, SessionID: id, Epoch: 2}); !errors.Is(x.Err(), ErrInvalidEpoch) {
		t.Fatalf("epoch 2 first: %v, want ErrInvalidEpoch", x.Err())
	}
	x := c.NewContext(t0, Request{Version: 12, SessionID: id, Epoch: 1})
	if x.Err() != nil || !x.Incremental() || len(x.Partitions()) != 2 {
		t.Fatalf("epoch 1: err %v incremental %v partitions %d", x.Err(), x.Incremental(), len(x.Partitions()))
	}
	if x := c.NewContext(t0, Request{Version: 12, SessionID: id, Epoch: 1}); !errors.Is(x.Err(), ErrInvalidEpoch) {
		t.Fatalf("epoch 1 again: %v, want ErrInvalidEpoch", x.Err())
	}
	if x := c.NewContext(t0, Request{Version: 13, SessionID: id, Epoch: 2}); !errors.Is(x.Err(), ErrTopicIDMismatch) {
		t.Fatalf("v13 on a names session: %v, want ErrTopicIDMismatch", x.Err())
	}
	if x := c.NewContext(t0, Request{Version: 12, SessionID: id + 1, Epoch: 2}); !errors.Is(x.Err(), ErrSessionNotFound) {
		t.Fatalf("unknown ID: %v, want ErrSessionNotFound", x.Err())
	}
	x = c.NewContext(t0, Request{Version: 12, SessionID: id, Epoch: FinalEpoch, Partitions: []Requested{part("t", 0, 0)}})
	if got, _, err := x.Finish(t0, []Answer{quiet(10)}); x.Incremental() || got != NoSession || err != nil {
		t.Fatalf("final epoch: session %d err %v, want sessionless", got, err)
	}
	if c.Stats().Sessions != 0 {
		t.Fatalf("final epoch left %d sessions", c.Stats().Sessions)
	}
	// Before v7 a request has no session fields: sessionless whatever the
	// decoder left in them.
	x = c.NewContext(t0, Request{Version: 6, Epoch: InitialEpoch, Partitions: []Requested{part("t", 0, 0)}})
	if got, _, _ := x.Finish(t0, []Answer{quiet(10)}); got != NoSession {
		t.Fatalf("v6 created session %d", got)
	}
}

// TestFetchSessionIncremental checks rule fetch-session-incremental: only
// partitions with records, an error or a changed high watermark or log
// start are kept, an error is kept again once gone, partitions with
// records move to the back, forgotten ones leave, and a session left empty
// closes.
func TestFetchSessionIncremental(t *testing.T) {
	c := NewCache(DefaultSlots)
	id := open(t, c, t0, 4)
	step := func(epoch int32, req []Requested, forgot []Key, answers func(i int, p Requested) Answer) ([]Requested, []bool) {
		t.Helper()
		x := c.NewContext(t0, Request{Version: 12, SessionID: id, Epoch: epoch, Partitions: req, Forgotten: forgot})
		if x.Err() != nil {
			t.Fatalf("epoch %d: %v", epoch, x.Err())
		}
		parts := x.Partitions()
		as := make([]Answer, len(parts))
		for i, p := range parts {
			as[i] = answers(i, p)
			if got, want := x.Keep(i, &as[i]), x.answered[i].mustAnswer(&as[i], false); got != want {
				t.Fatalf("Keep disagrees with mustAnswer")
			}
		}
		got, keep, err := x.Finish(t0, as)
		if err != nil || got != id {
			t.Fatalf("epoch %d: session %d err %v", epoch, got, err)
		}
		return parts, keep
	}
	// Nothing changed: nothing kept.
	_, keep := step(1, nil, nil, func(int, Requested) Answer { return quiet(10) })
	for i, k := range keep {
		if k {
			t.Errorf("unchanged partition %d kept", i)
		}
	}
	// Partition 1 has records, 2 a new high watermark, 3 fails.
	parts, keep := step(2, []Requested{part("t", 1, 5)}, nil, func(i int, p Requested) Answer {
		switch p.Partition {
		case 1:
			if p.FetchOffset != 5 {
				t.Errorf("partition 1 fetch offset %d, want the updated 5", p.FetchOffset)
			}
			return Answer{Records: true, HighWatermark: 10}
		case 2:
			return quiet(11)
		case 3:
			return Answer{Failed: true, HighWatermark: -1, LogStartOffset: -1}
		}
		return quiet(10)
	})
	want := []bool{false, true, true, true}
	for i := range parts {
		if keep[i] != want[parts[i].Partition] {
			t.Errorf("partition %d kept %v, want %v", parts[i].Partition, keep[i], want[parts[i].Partition])
		}
	}
	// Partition 1 moved to the back; 3's error is gone and it is answered
	// again though its offsets are what it answered before the error.
	parts, keep = step(3, nil, []Key{{Name: "t", Partition: 0}}, func(i int, p Requested) Answer {
		if p.Partition == 2 {
			return quiet(11)
		}
		return quiet(10)
	})
	var order []int32
	for _, p := range parts {
		order = append(order, p.Partition)
	}
	if len(order) != 3 || order[0] != 2 || order[1] != 3 || order[2] != 1 {
		t.Fatalf("order after forgetting 0 and rotating 1: %v, want [2 3 1]", order)
	}
	if keep[0] || !keep[1] || keep[2] {
		t.Fatalf("keep %v, want only the recovered partition 3", keep)
	}
	// Forgetting everything closes the session.
	x := c.NewContext(t0, Request{Version: 12, SessionID: id, Epoch: 4, Forgotten: []Key{{Name: "t", Partition: 1}, {Name: "t", Partition: 2}, {Name: "t", Partition: 3}}})
	if x.Incremental() || c.Stats().Sessions != 0 {
		t.Fatalf("empty session: incremental %v sessions %d", x.Incremental(), c.Stats().Sessions)
	}
}

// TestFetchSessionRace checks that of two requests of one session the
// second one's finish wins and the first fails with the session's ID
// (IncrementalFetchContext.updateAndGenerateResponseData).
func TestFetchSessionRace(t *testing.T) {
	c := NewCache(DefaultSlots)
	id := open(t, c, t0, 1)
	first := c.NewContext(t0, Request{Version: 12, SessionID: id, Epoch: 1})
	second := c.NewContext(t0, Request{Version: 12, SessionID: id, Epoch: 2})
	if _, _, err := second.Finish(t0, []Answer{quiet(10)}); err != nil {
		t.Fatal(err)
	}
	if got, _, err := first.Finish(t0, []Answer{quiet(10)}); got != id || !errors.Is(err, ErrInvalidEpoch) {
		t.Fatalf("stale finish: session %d err %v, want %d and ErrInvalidEpoch", got, err, id)
	}
}

// TestFetchSessionEviction checks rules fetch-session-cache-slots and
// fetch-session-eviction: a full cache creates no session for a new
// client until a session was unused for more than EvictionAge, or one
// older than EvictionAge at its last use holds fewer partitions than the
// new one.
func TestFetchSessionEviction(t *testing.T) {
	c := NewCache(2)
	a := open(t, c, t0, 3)
	b := open(t, c, t0, 5)
	if got := open(t, c, t0, 10); got != NoSession {
		t.Fatalf("full cache created session %d", got)
	}
	// Both used again after EvictionAge: old enough to be evicted for a
	// larger session, not unused long enough to go for any.
	later := t0.Add(EvictionAge + time.Second)
	for _, s := range []struct {
		id int32
		n  int
	}{{a, 3}, {b, 5}} {
		x := c.NewContext(later, Request{Version: 12, SessionID: s.id, Epoch: 1})
		if _, _, err := x.Finish(later, make([]Answer, s.n)); err != nil {
			t.Fatal(err)
		}
	}
	if got := open(t, c, later, 3); got != NoSession {
		t.Fatalf("a session as small as the smallest evicted it: %d", got)
	}
	d := open(t, c, later, 4)
	if d == NoSession {
		t.Fatal("a larger session did not evict the smaller old one")
	}
	if x := c.NewContext(later, Request{Version: 12, SessionID: a, Epoch: 2}); !errors.Is(x.Err(), ErrSessionNotFound) {
		t.Fatalf("evicted session: %v", x.Err())
	}
	// Unused for more than EvictionAge: the least recently used goes for
	// any new session, however small.
	stale := later.Add(EvictionAge + time.Second)
	if got := open(t, c, stale, 1); got == NoSession {
		t.Fatal("a stale session was not evicted")
	}
	if st := c.Stats(); st.Sessions != 2 || st.Evictions != 2 {
		t.Fatalf("stats %+v, want 2 sessions and 2 evictions", st)
	}
	if got := open(t, NewCache(0), t0, 1); got != NoSession {
		t.Fatalf("zero slots created session %d", got)
	}
}

// TestFetchSessionBuffersReused checks that a request's buffers, handed
// back by Release, serve the session's next request with what the session
// holds then: the partition added and the offset updated in between show,
// and the answers start zeroed.
func TestFetchSessionBuffersReused(t *testing.T) {
	c := NewCache(DefaultSlots)
	id := open(t, c, t0, 2)
	x := c.NewContext(t0, Request{Version: 12, SessionID: id, Epoch: 1})
	as := x.Answers()
	as[0] = Answer{Records: true, HighWatermark: 10}
	if _, _, err := x.Finish(t0, as); err != nil {
		t.Fatal(err)
	}
	x.Release()
	y := c.NewContext(t0, Request{Version: 12, SessionID: id, Epoch: 2, Partitions: []Requested{part("t", 1, 7), part("t", 2, 0)}})
	parts := y.Partitions()
	if len(parts) != 3 || parts[0].Partition != 1 || parts[0].FetchOffset != 7 || parts[1].Partition != 0 || parts[2].Partition != 2 {
		t.Fatalf("partitions after reuse: %+v, want 1@7, 0 (moved back after its records), 2 (added)", parts)
	}
	for i, a := range y.Answers() {
		if a != (Answer{}) {
			t.Fatalf("answer %d not zeroed: %+v", i, a)
		}
	}
	y.Release()
	y.Release() // a second release is harmless
}
