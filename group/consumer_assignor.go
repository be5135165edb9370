package group

import "slices"

// assignRange is the range assignor of KIP-848 consumer groups: for each
// topic, its subscribers sorted by member ID take consecutive ranges of
// partitions, the first (partitions mod subscribers) one more than the
// rest, as Kafka's RangeAssignor. It is not sticky: ranges move when
// members come and go, and revoke-first makes the move safe.
func assignRange(members []assignMember, topics map[string]TopicInfo) map[string]map[topicPartition]bool {
	out := make(map[string]map[topicPartition]bool, len(members))
	subscribers := make(map[string][]string)
	for _, m := range members {
		out[m.id] = make(map[topicPartition]bool)
		for _, t := range m.topics {
			subscribers[t] = append(subscribers[t], m.id)
		}
	}
	for name, ids := range subscribers {
		info, ok := topics[name]
		if !ok {
			continue
		}
		slices.Sort(ids)
		n := int32(len(ids))
		per, extra := info.Partitions/n, info.Partitions%n
		next := int32(0)
		for i, id := range ids {
			count := per
			if int32(i) < extra {
				count++
			}
			for p := next; p < next+count; p++ {
				out[id][topicPartition{info.ID, p}] = true
			}
			next += count
		}
	}
	return out
}
