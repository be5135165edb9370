package broker

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func tp(p int32) topicPartition { return topicPartition{topicID: [16]byte{1}, partition: p} }

func partitionsOf(parts []sessionPartition) []int32 {
	var out []int32
	for _, p := range parts {
		out = append(out, p.partition)
	}
	return out
}

// Rules of share-groups.md §2.4, one case each.
func TestShareSessionRules(t *testing.T) {
	key := shareSessionKey{"g", "m"}
	c1, c2 := &conn{}, &conn{}

	t.Run("open holds exactly the request's partitions, all marked", func(t *testing.T) {
		s := newShareSessions(10)
		parts, err := s.open(key, c1, []topicPartition{tp(0), tp(1), tp(0)})
		if err != nil {
			t.Fatal(err)
		}
		if got := partitionsOf(parts); !slices.Equal(got, []int32{0, 1}) {
			t.Fatalf("partitions %v", got)
		}
		for _, p := range parts {
			if !p.mustAppear {
				t.Fatalf("partition %d of a new session not marked to appear", p.partition)
			}
		}
	})

	t.Run("incremental epochs must match and bump", func(t *testing.T) {
		s := newShareSessions(10)
		s.open(key, c1, nil)
		if _, err := s.advance(key, 2, nil, nil); !errors.Is(err, errInvalidShareSessionEpoch) {
			t.Fatalf("epoch 2 on a new session: %v", err)
		}
		if _, err := s.advance(key, 1, nil, nil); err != nil {
			t.Fatalf("epoch 1: %v", err)
		}
		if _, err := s.advance(key, 1, nil, nil); !errors.Is(err, errInvalidShareSessionEpoch) {
			t.Fatalf("epoch 1 again: %v", err)
		}
		if _, err := s.advance(shareSessionKey{"g", "other"}, 1, nil, nil); !errors.Is(err, errShareSessionNotFound) {
			t.Fatalf("unknown member: %v", err)
		}
	})

	t.Run("epoch wraps from max int32 to 1", func(t *testing.T) {
		if nextEpoch(math.MaxInt32) != 1 || nextEpoch(1) != 2 {
			t.Fatal("nextEpoch does not wrap to 1")
		}
	})

	t.Run("added then forgotten partitions; both lists means removed", func(t *testing.T) {
		s := newShareSessions(10)
		s.open(key, c1, []topicPartition{tp(0)})
		s.responded(key, []topicPartition{tp(0)}, nil)
		parts, err := s.advance(key, 1, []topicPartition{tp(1), tp(2)}, []topicPartition{tp(0), tp(2)})
		if err != nil {
			t.Fatal(err)
		}
		if got := partitionsOf(parts); !slices.Equal(got, []int32{1}) {
			t.Fatalf("partitions %v, want [1]", got)
		}
		if !parts[0].mustAppear {
			t.Fatal("a newly added partition is not marked to appear")
		}
	})

	t.Run("appearing clears the mark, failing sets it", func(t *testing.T) {
		s := newShareSessions(10)
		s.open(key, c1, []topicPartition{tp(0), tp(1)})
		s.responded(key, []topicPartition{tp(0), tp(1)}, nil)
		s.responded(key, nil, []topicPartition{tp(1)})
		parts, _ := s.advance(key, 1, nil, nil)
		if parts[0].mustAppear || !parts[1].mustAppear {
			t.Fatalf("marks %+v", parts)
		}
	})

	t.Run("reopening replaces without counting against the limit", func(t *testing.T) {
		s := newShareSessions(1)
		s.open(key, c1, []topicPartition{tp(0)})
		parts, err := s.open(key, c2, []topicPartition{tp(3)})
		if err != nil || !slices.Equal(partitionsOf(parts), []int32{3}) {
			t.Fatalf("reopen: %v %v", parts, err)
		}
		if _, err := s.open(shareSessionKey{"g", "m2"}, c1, nil); !errors.Is(err, errShareSessionLimit) {
			t.Fatalf("a second session beyond the limit: %v", err)
		}
	})

	t.Run("ShareAcknowledge epochs", func(t *testing.T) {
		s := newShareSessions(10)
		if err := s.acknowledge(key, 1); !errors.Is(err, errShareSessionNotFound) {
			t.Fatalf("no session: %v", err)
		}
		s.open(key, c1, nil)
		if err := s.acknowledge(key, 0); !errors.Is(err, errInvalidShareSessionEpoch) {
			t.Fatalf("epoch 0: %v", err)
		}
		if err := s.acknowledge(key, -1); err != nil {
			t.Fatalf("epoch -1 with a session: %v", err)
		}
		if err := s.acknowledge(key, 1); err != nil {
			t.Fatalf("epoch 1 (-1 must not have bumped): %v", err)
		}
		if _, err := s.advance(key, 2, nil, nil); err != nil {
			t.Fatalf("ShareFetch after an acknowledge bumped to 2: %v", err)
		}
	})

	t.Run("close returns the partitions to release", func(t *testing.T) {
		s := newShareSessions(10)
		s.open(key, c1, []topicPartition{tp(0), tp(1)})
		if got := s.close(key); len(got) != 2 {
			t.Fatalf("close returned %v", got)
		}
		if err := s.exists(key); !errors.Is(err, errShareSessionNotFound) {
			t.Fatalf("after close: %v", err)
		}
	})

	t.Run("a closed connection ends only the sessions it opened", func(t *testing.T) {
		s := newShareSessions(10)
		s.open(key, c1, []topicPartition{tp(0)})
		other := shareSessionKey{"g", "m2"}
		s.open(other, c1, []topicPartition{tp(1)})
		s.open(other, c2, []topicPartition{tp(2)}) // reopened elsewhere
		closed := s.closedConn(c1)
		if len(closed) != 1 || len(closed[key]) != 1 {
			t.Fatalf("closed %v, want only %v", closed, key)
		}
		if s.count() != 1 || s.exists(other) != nil {
			t.Fatal("the session reopened on another connection was closed")
		}
	})
}
