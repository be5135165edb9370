package shareserve

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func tp(p int32) TopicPartition { return TopicPartition{TopicID: [16]byte{1}, Partition: p} }

func partitionsOf(parts []SessionPartition) []int32 {
	var out []int32
	for _, p := range parts {
		out = append(out, p.Partition)
	}
	return out
}

// Rules of share-groups.md §2.4, one case each.
func TestShareSessionRules(t *testing.T) {
	key := SessionKey{Group: "g", Member: "m"}
	c1, c2 := new(int), new(int) // two connections

	t.Run("open holds exactly the request's partitions, all marked", func(t *testing.T) {
		s := newSessions(10)
		parts, err := s.open(key, c1, []TopicPartition{tp(0), tp(1), tp(0)})
		if err != nil {
			t.Fatal(err)
		}
		if got := partitionsOf(parts); !slices.Equal(got, []int32{0, 1}) {
			t.Fatalf("partitions %v", got)
		}
		for _, p := range parts {
			if !p.MustAppear {
				t.Fatalf("partition %d of a new session not marked to appear", p.Partition)
			}
		}
	})

	t.Run("incremental epochs must match and bump", func(t *testing.T) {
		s := newSessions(10)
		s.open(key, c1, nil)
		if _, err := s.advance(key, 2, nil, nil); !errors.Is(err, ErrInvalidShareSessionEpoch) {
			t.Fatalf("epoch 2 on a new session: %v", err)
		}
		if _, err := s.advance(key, 1, nil, nil); err != nil {
			t.Fatalf("epoch 1: %v", err)
		}
		if _, err := s.advance(key, 1, nil, nil); !errors.Is(err, ErrInvalidShareSessionEpoch) {
			t.Fatalf("epoch 1 again: %v", err)
		}
		if _, err := s.advance(SessionKey{Group: "g", Member: "other"}, 1, nil, nil); !errors.Is(err, ErrShareSessionNotFound) {
			t.Fatalf("unknown member: %v", err)
		}
	})

	t.Run("epoch wraps from max int32 to 1", func(t *testing.T) {
		if nextEpoch(math.MaxInt32) != 1 || nextEpoch(1) != 2 {
			t.Fatal("nextEpoch does not wrap to 1")
		}
	})

	t.Run("added then forgotten partitions; both lists means removed", func(t *testing.T) {
		s := newSessions(10)
		opened, _ := s.open(key, c1, []TopicPartition{tp(0)})
		appeared := opened[0]
		appeared.MustAppear = false
		s.responded(key, []SessionPartition{appeared})
		parts, err := s.advance(key, 1, []TopicPartition{tp(1), tp(2)}, []TopicPartition{tp(0), tp(2)})
		if err != nil {
			t.Fatal(err)
		}
		if got := partitionsOf(parts); !slices.Equal(got, []int32{1}) {
			t.Fatalf("partitions %v, want [1]", got)
		}
		if !parts[0].MustAppear {
			t.Fatal("a newly added partition is not marked to appear")
		}
	})

	t.Run("appearing clears the mark, failing sets it", func(t *testing.T) {
		s := newSessions(10)
		opened, _ := s.open(key, c1, []TopicPartition{tp(0), tp(1)})
		said := slices.Clone(opened) // as listed says them: appeared, none failed
		for i := range said {
			said[i].MustAppear = false
		}
		s.responded(key, said)
		failed := said[1]
		failed.MustAppear = true
		s.responded(key, []SessionPartition{failed})
		parts, _ := s.advance(key, 1, nil, nil)
		if parts[0].MustAppear || !parts[1].MustAppear {
			t.Fatalf("marks %+v", parts)
		}
	})

	t.Run("a listing renumbered meanwhile marks nothing it did not list", func(t *testing.T) {
		s := newSessions(10)
		var all []TopicPartition
		for p := range int32(100) {
			all = append(all, tp(p))
		}
		opened, _ := s.open(key, c1, all)
		said := slices.Clone(opened)
		for i := range said {
			said[i].MustAppear = false
		}
		s.responded(key, said)
		// Forgetting 98 of 100 leaves the seqs sparse: the two left are
		// renumbered 0 and 1, the seqs partitions 0 and 1 had.
		parts, err := s.advance(key, 1, nil, all[:98])
		if err != nil || !slices.Equal(partitionsOf(parts), []int32{98, 99}) || parts[0].seq != 0 {
			t.Fatalf("after forgetting: %+v %v", parts, err)
		}
		// A listing made before that (partition 0 failed) must not mark
		// partition 98, which has seq 0 now.
		s.responded(key, []SessionPartition{{TopicPartition: tp(0), MustAppear: true, seq: opened[0].seq}})
		parts, _ = s.advance(key, 2, nil, nil)
		if parts[0].MustAppear || parts[1].MustAppear {
			t.Fatalf("marks after a stale listing: %+v", parts)
		}
	})

	t.Run("reopening replaces without counting against the limit", func(t *testing.T) {
		s := newSessions(1)
		s.open(key, c1, []TopicPartition{tp(0)})
		parts, err := s.open(key, c2, []TopicPartition{tp(3)})
		if err != nil || !slices.Equal(partitionsOf(parts), []int32{3}) {
			t.Fatalf("reopen: %v %v", parts, err)
		}
		if _, err := s.open(SessionKey{Group: "g", Member: "m2"}, c1, nil); !errors.Is(err, ErrShareSessionLimit) {
			t.Fatalf("a second session beyond the limit: %v", err)
		}
	})

	t.Run("ShareAcknowledge epochs", func(t *testing.T) {
		s := newSessions(10)
		if err := s.ackEpoch(key, 1); !errors.Is(err, ErrShareSessionNotFound) {
			t.Fatalf("no session: %v", err)
		}
		s.open(key, c1, nil)
		if err := s.ackEpoch(key, 0); !errors.Is(err, ErrInvalidShareSessionEpoch) {
			t.Fatalf("epoch 0: %v", err)
		}
		if err := s.ackEpoch(key, -1); err != nil {
			t.Fatalf("epoch -1 with a session: %v", err)
		}
		if err := s.ackEpoch(key, 1); err != nil {
			t.Fatalf("epoch 1 (-1 must not have bumped): %v", err)
		}
		if _, err := s.advance(key, 2, nil, nil); err != nil {
			t.Fatalf("ShareFetch after an acknowledge bumped to 2: %v", err)
		}
	})

	t.Run("close returns the partitions to release", func(t *testing.T) {
		s := newSessions(10)
		s.open(key, c1, []TopicPartition{tp(0), tp(1)})
		if got := s.close(key); len(got) != 2 {
			t.Fatalf("close returned %v", got)
		}
		if err := s.exists(key); !errors.Is(err, ErrShareSessionNotFound) {
			t.Fatalf("after close: %v", err)
		}
	})

	t.Run("a closed connection ends only the sessions it opened", func(t *testing.T) {
		s := newSessions(10)
		s.open(key, c1, []TopicPartition{tp(0)})
		other := SessionKey{Group: "g", Member: "m2"}
		s.open(other, c1, []TopicPartition{tp(1)})
		s.open(other, c2, []TopicPartition{tp(2)}) // reopened elsewhere
		closed := s.closedOwner(c1)
		if len(closed) != 1 || len(closed[key]) != 1 {
			t.Fatalf("closed %v, want only %v", closed, key)
		}
		if s.Count() != 1 || s.exists(other) != nil {
			t.Fatal("the session reopened on another connection was closed")
		}
	})
}

// share-groups.md §11.4: a session ended by its connection closing is an
// eviction; one closed by request or replaced by a new epoch 0 is not.
// Each node's figures are its own.
func TestShareSessionStats(t *testing.T) {
	s := newSessions(10)
	c1, c2 := new(int), new(int) // two connections
	a := SessionKey{Group: "g", Member: "a"}
	b := SessionKey{Group: "g", Member: "b"}
	other := SessionKey{Group: "g", Member: "a", Node: 1}
	for _, open := range []struct {
		key   SessionKey
		owner any
		parts []TopicPartition
	}{
		{a, c1, []TopicPartition{tp(0), tp(1)}},
		{a, c1, []TopicPartition{tp(0), tp(1), tp(2)}}, // epoch 0 again: replaced
		{b, c2, []TopicPartition{tp(0)}},
		{other, c1, []TopicPartition{tp(0)}},
	} {
		if _, err := s.open(open.key, open.owner, open.parts); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := s.StatsOn(0), (NodeStats{Sessions: 2, Partitions: 4}); got != want {
		t.Fatalf("node 0: %+v, want %+v", got, want)
	}
	s.close(b)
	s.closedOwner(c1) // a on node 0 and on node 1
	if got, want := s.StatsOn(0), (NodeStats{Evictions: 1}); got != want {
		t.Fatalf("node 0 after closes: %+v, want %+v", got, want)
	}
	if got, want := s.StatsOn(1), (NodeStats{Evictions: 1}); got != want {
		t.Fatalf("node 1 after closes: %+v, want %+v", got, want)
	}
}

// share-fetch-ready-set at thousands of partitions (issue 22): opening a
// session makes its ready set's entries in one slab, not one object per
// partition (each a thing the GC marks on every cycle while the session
// lasts), and a partition added later comes from a slab too.
func TestSessionOpenAllocatesPerSessionNotPerPartition(t *testing.T) {
	const n = 1024
	parts := make([]TopicPartition, n)
	for i := range parts {
		parts[i] = tp(int32(i))
	}
	key := SessionKey{Group: "g", Member: "m"}
	s := newSessions(10)
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := s.open(key, "conn", parts); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 32 {
		t.Errorf("opening a session of %d partitions: %v allocations, want a few for the session", n, allocs)
	}
	if _, err := s.advance(key, 1, []TopicPartition{tp(n), tp(n + 1)}, nil); err != nil {
		t.Fatal(err)
	}
	if seq, ok := s.byKey[key].ready.seqOf(tp(n + 1)); !ok || seq != n+1 {
		t.Fatalf("a partition added after the open: seq %d, in the set %v; want %d, true", seq, ok, n+1)
	}
}
