package storage

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTopicsListing drives the kept listing (listing.go) through creates,
// restores and deletes by name and by ID, in random order with random
// listings between, and checks every listing against the store's own map
// sorted afresh: the same topics (by identity, so a name deleted and
// created again lists the new topic) in name order. A listing handed out
// earlier stays as it was.
func TestTopicsListing(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 22))
	s := NewStore()
	type handed struct {
		list, want []*Topic
	}
	var earlier []handed
	check := func(step int) {
		t.Helper()
		got := s.Topics()
		s.mu.RLock()
		want := slices.SortedFunc(maps.Values(s.byName), func(a, b *Topic) int {
			switch {
			case a.Name < b.Name:
				return -1
			case a.Name > b.Name:
				return 1
			}
			return 0
		})
		s.mu.RUnlock()
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: Topics lists %d topics %v, want %d %v", step, len(got), names(got), len(want), names(want))
		}
		if cap(got) != len(got) {
			t.Fatalf("step %d: the listing has room to append (cap %d, len %d): a caller's append would write into the shared array", step, cap(got), len(got))
		}
		earlier = append(earlier, handed{got, slices.Clone(got)})
	}
	for step := range 3000 {
		name := fmt.Sprintf("t%03d", rng.IntN(300))
		switch op := rng.IntN(10); {
		case op < 5:
			_, _ = s.CreateTopic(name, 1, nil) // ErrTopicExists is part of the walk
		case op < 6:
			var id TopicID
			id[0], id[1], id[15] = byte(step>>8), byte(step), 1
			_, _ = s.RestoreTopic(name, id, 1, nil)
		case op < 7:
			_, _ = s.DeleteTopic(name)
		case op < 8:
			if tp := s.Topic(name); tp != nil {
				if _, err := s.DeleteTopicByID(tp.ID); err != nil {
					t.Fatal(err)
				}
			}
		default:
			check(step)
		}
	}
	check(-1)
	for i, h := range earlier {
		if !slices.Equal(h.list, h.want) {
			t.Fatalf("listing %d changed after it was handed out", i)
		}
	}
}

// TestTopicsListingAllocs: listing topics when none changed since the
// last listing allocates nothing; after k creations it allocates the new
// listing only.
func TestTopicsListingAllocs(t *testing.T) {
	s := NewStore()
	for i := range 1000 {
		if _, err := s.CreateTopic(fmt.Sprintf("t%04d", i), 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	s.Topics()
	if n := testing.AllocsPerRun(100, func() { s.Topics() }); n != 0 {
		t.Errorf("Topics with nothing changed: %v allocations, want 0", n)
	}
}

func names(ts []*Topic) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}
