package storage

import (
	"slices"
	"strings"
)

// listing keeps the store's topics sorted by name for Store.Topics, so
// that listing every topic (Metadata for all topics, the retention sweep,
// the HTTP API) costs what changed since the last listing instead of a
// sort of every topic each time, which made Metadata for all of 20,000
// topics cost 3× per topic what it did for 1,000 (issue 22).
//
// sorted is the last listing, handed to callers and never modified after;
// fresh holds the topics created since, in creation order; stale says a
// topic was deleted since. The Store's lock guards all three: added and
// deleted under its write lock, current under its read lock, refresh
// under its write lock.
type listing struct {
	sorted []*Topic
	fresh  []*Topic
	stale  bool
}

// added records a topic that was just created or restored.
func (l *listing) added(t *Topic) { l.fresh = append(l.fresh, t) }

// deleted records that some topic was deleted.
func (l *listing) deleted() { l.stale = true }

// current returns the last listing and true when no topic was created or
// deleted since.
func (l *listing) current() ([]*Topic, bool) {
	return l.sorted, len(l.fresh) == 0 && !l.stale
}

// refresh makes and returns a new listing of live (the store's topics by
// name): the last one without the topics deleted since, merged with the
// fresh ones sorted. For n topics listed and k created since that is
// O(n + k log k); a deletion adds one map lookup per topic.
func (l *listing) refresh(live map[string]*Topic) []*Topic {
	if ts, ok := l.current(); ok {
		return ts // another caller refreshed it first
	}
	// A deleted topic's name may be taken again by a fresh one: identity,
	// not the name, says whether an entry is still a topic.
	keep := func(t *Topic) bool { return !l.stale || live[t.Name] == t }
	fresh := l.fresh
	slices.SortFunc(fresh, func(a, b *Topic) int { return strings.Compare(a.Name, b.Name) })
	out := make([]*Topic, 0, len(live))
	old := l.sorted
	for len(old) > 0 || len(fresh) > 0 {
		var t *Topic
		if len(fresh) == 0 || len(old) > 0 && old[0].Name < fresh[0].Name {
			t, old = old[0], old[1:]
		} else {
			t, fresh = fresh[0], fresh[1:]
		}
		if keep(t) {
			out = append(out, t)
		}
	}
	clear(l.fresh) // no reference to a deleted topic stays behind
	l.sorted, l.fresh, l.stale = slices.Clip(out), l.fresh[:0], false
	return l.sorted
}
