package group

import (
	"iter"
	"maps"
	"slices"
	"strings"
)

// TopicInfo is what the group needs to know of a topic.
type TopicInfo struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// TopicResolver looks a topic up by name; ok is false if it does not exist.
// It is called with a group's lock held and must not call back into this
// package.
type TopicResolver func(name string) (info TopicInfo, ok bool)

// TopicPartitions is the part of an assignment on one topic.
type TopicPartitions struct {
	TopicID    [16]byte
	Topic      string
	Partitions []int32 // ascending
}

// topicPartition identifies one partition by topic ID, so that a topic
// deleted and recreated under the same name counts as a different topic.
type topicPartition struct {
	id        [16]byte
	partition int32
}

// refreshMetadata resolves every topic named in subscriptions, in name
// order, replaces *metadata with what it found and reports whether that
// differs from what the group last saw (topic created or deleted,
// partitions added, topic recreated with a new ID): the KIP-848 and share
// groups bump their group epoch on it.
func refreshMetadata(metadata *map[string]TopicInfo, subscriptions iter.Seq[[]string], resolve TopicResolver) bool {
	set := make(map[string]bool)
	for topics := range subscriptions {
		for _, t := range topics {
			set[t] = true
		}
	}
	next := make(map[string]TopicInfo)
	for _, t := range slices.Sorted(maps.Keys(set)) {
		if info, ok := resolve(t); ok {
			info.Name = t
			next[t] = info
		}
	}
	changed := !maps.Equal(next, *metadata)
	*metadata = next
	return changed
}

// assignmentList renders a member's partitions sorted by topic name, then
// partition; names come from topics by ID.
func assignmentList(set map[topicPartition]bool, topics map[string]TopicInfo) []TopicPartitions {
	if len(set) == 0 {
		return []TopicPartitions{}
	}
	names := make(map[[16]byte]string, len(topics))
	for name, info := range topics {
		names[info.ID] = name
	}
	byID := make(map[[16]byte]*TopicPartitions)
	var out []*TopicPartitions
	for tp := range set {
		tps := byID[tp.id]
		if tps == nil {
			tps = &TopicPartitions{TopicID: tp.id, Topic: names[tp.id]}
			byID[tp.id] = tps
			out = append(out, tps)
		}
		tps.Partitions = append(tps.Partitions, tp.partition)
	}
	slices.SortFunc(out, func(a, b *TopicPartitions) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return slices.Compare(a.TopicID[:], b.TopicID[:])
	})
	res := make([]TopicPartitions, len(out))
	for i, t := range out {
		slices.Sort(t.Partitions)
		res[i] = *t
	}
	return res
}
