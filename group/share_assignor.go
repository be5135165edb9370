package group

import "slices"

// assignMember is one member as the assignor sees it.
type assignMember struct {
	id     string
	topics []string // subscribed topic names, sorted, no duplicates
}

// assignSimple is Kafka's simple share assignor (share-groups.md §4.4):
// balance first, stickiness second, members sharing partitions when they
// outnumber them. members are in the coordinator's order (join order),
// which fixes each member's quota. prev is the previous target assignment;
// the result holds an entry, possibly empty, for every member.
//
// With identical subscriptions the partitions of all subscribed topics are
// pooled (so 2 members on topics A and B with one partition each get one
// partition each); otherwise each topic is balanced over its own
// subscribers and the results are unioned.
func assignSimple(members []assignMember, topics map[string]TopicInfo, prev map[string]map[topicPartition]bool) map[string]map[topicPartition]bool {
	return assignBalanced(members, topics, prev, 0)
}

// assignBalanced is assignSimple with at most maxSharing members on one
// partition; 0 means no limit. The uniform consumer assignor passes 1.
func assignBalanced(members []assignMember, topics map[string]TopicInfo, prev map[string]map[topicPartition]bool, maxSharing int) map[string]map[topicPartition]bool {
	out := make(map[string]map[topicPartition]bool, len(members))
	for _, m := range members {
		out[m.id] = make(map[topicPartition]bool)
	}
	for _, p := range assignPools(members, topics) {
		assignPool(p.members, p.parts, prev, out, maxSharing)
	}
	return out
}

// pool is a set of partitions balanced over a set of members, in the
// coordinator's order.
type pool struct {
	members []string
	parts   []topicPartition
}

// assignPools splits an assignment into pools as assignSimple describes:
// one of every subscribed partition when the subscriptions are identical,
// else one per topic (by name) over its subscribers.
func assignPools(members []assignMember, topics map[string]TopicInfo) []pool {
	if len(members) == 0 {
		return nil
	}
	homogeneous := true
	for _, m := range members[1:] {
		if !slices.Equal(m.topics, members[0].topics) {
			homogeneous = false
			break
		}
	}
	if homogeneous {
		var parts []topicPartition
		for _, name := range members[0].topics {
			parts = appendPartitions(parts, topics, name)
		}
		ids := make([]string, len(members))
		for i, m := range members {
			ids[i] = m.id
		}
		return []pool{{ids, parts}}
	}
	subscribers := make(map[string][]string)
	for _, m := range members {
		for _, t := range m.topics {
			subscribers[t] = append(subscribers[t], m.id)
		}
	}
	names := make([]string, 0, len(subscribers))
	for t := range subscribers {
		names = append(names, t)
	}
	slices.Sort(names)
	pools := make([]pool, 0, len(names))
	for _, t := range names {
		pools = append(pools, pool{subscribers[t], appendPartitions(nil, topics, t)})
	}
	return pools
}

func appendPartitions(parts []topicPartition, topics map[string]TopicInfo, name string) []topicPartition {
	info, ok := topics[name]
	if !ok {
		return parts
	}
	for p := int32(0); p < info.Partitions; p++ {
		parts = append(parts, topicPartition{info.ID, p})
	}
	return parts
}

// assignPool assigns parts over members and adds the result to out. Only
// prev entries on parts count as existing assignments, which drops
// partitions of topics no longer subscribed (or of another pool).
//
// Worked example, 5 members and one topic of 2 partitions: desiredSharing =
// ceil(5/2) = 3 members per partition, 3*2 = 6 slots, quotas
// ceil(6(i+1)/5) - ceil(6i/5) = [2,1,1,1,1]. Walking the partitions with a
// round-robin cursor over under-quota members gives p0 to members 0,1,2 and
// p1 to members 3,4,0.
//
// With maxSharing 1 and more members than partitions, slots = p < m and
// the quotas are 0 or 1: the first members by position get one partition
// each, the rest none.
func assignPool(members []string, parts []topicPartition, prev map[string]map[topicPartition]bool, out map[string]map[topicPartition]bool, maxSharing int) {
	m, p := len(members), len(parts)
	if m == 0 || p == 0 {
		return
	}
	sharing, quota := poolShares(m, p, maxSharing)
	index := partIndex(parts)

	// Step 1: keep what each member held of these partitions, in
	// partition order.
	held := make([][]int, m)    // member -> partition indexes, ascending
	holders := make([][]int, p) // partition -> member indexes, ascending
	for mi, id := range members {
		for tp := range prev[id] {
			if pi, ok := index(tp); ok {
				held[mi] = append(held[mi], pi)
			}
		}
		slices.Sort(held[mi])
		for _, pi := range held[mi] {
			holders[pi] = append(holders[pi], mi)
		}
	}
	// Both lists stay ascending while steps 2 and 3 trim them, so a drop
	// finds its entries by binary search: a rebalance of thousands of
	// partitions costs n log n, not n² (issue 22).
	unhold := func(mi, pi int) {
		if i, ok := slices.BinarySearch(holders[pi], mi); ok {
			holders[pi] = slices.Delete(holders[pi], i, i+1)
		}
	}
	drop := func(mi, pi int) {
		if i, ok := slices.BinarySearch(held[mi], pi); ok {
			held[mi] = slices.Delete(held[mi], i, i+1)
		}
		unhold(mi, pi)
	}

	// Step 2: trim partitions shared by more members than desired, taking
	// them first from members above quota (as Kafka's builder does), then
	// from the last holders.
	for pi := range parts {
		for _, over := range []bool{true, false} {
			for i := len(holders[pi]) - 1; i >= 0 && len(holders[pi]) > sharing; i-- {
				mi := holders[pi][i]
				if (len(held[mi]) > quota[mi]) == over {
					drop(mi, pi)
				}
			}
		}
	}
	// Step 3: trim members still above quota, dropping their highest
	// partitions.
	for mi := range members {
		if len(held[mi]) > quota[mi] {
			for _, pi := range held[mi][quota[mi]:] {
				unhold(mi, pi)
			}
			held[mi] = held[mi][:quota[mi]]
		}
	}

	// Step 4: give each under-shared partition to under-quota members that
	// do not hold it yet, round robin. A partition nobody eligible can take
	// is left under-shared: a slight imbalance Kafka accepts too.
	var unfilled []int
	for mi := range members {
		if len(held[mi]) < quota[mi] {
			unfilled = append(unfilled, mi)
		}
	}
	cursor := 0
	for pi := range parts {
		for len(holders[pi]) < sharing && len(unfilled) > 0 {
			given := false
			for tries := len(unfilled); tries > 0; tries-- {
				if cursor >= len(unfilled) {
					cursor = 0
				}
				mi := unfilled[cursor]
				if slices.Contains(holders[pi], mi) {
					cursor++
					continue
				}
				held[mi] = append(held[mi], pi)
				holders[pi] = append(holders[pi], mi)
				given = true
				if len(held[mi]) >= quota[mi] {
					unfilled = slices.Delete(unfilled, cursor, cursor+1)
				} else {
					cursor++
				}
				break
			}
			if !given {
				break
			}
		}
	}

	for mi, id := range members {
		if len(out[id]) == 0 { // this member's first pool: size it once
			out[id] = make(map[topicPartition]bool, len(held[mi]))
		}
		for _, pi := range held[mi] {
			out[id][parts[pi]] = true
		}
	}
}

// partIndex returns the lookup of a partition's index in parts. When
// parts are runs of each topic's partitions 0..n-1, as appendPartitions
// builds them, it keeps a map of the runs' starts, not of every
// partition, so a rebalance of thousands of partitions does not build one
// more map of them all; other shapes get a map of every partition.
func partIndex(parts []topicPartition) func(topicPartition) (int, bool) {
	type run struct{ start, n int }
	runs := make(map[[16]byte]run)
	for i := 0; i < len(parts); {
		j := i
		for j < len(parts) && parts[j].id == parts[i].id && int(parts[j].partition) == j-i {
			j++
		}
		if _, seen := runs[parts[i].id]; seen || j == i {
			return fullPartIndex(parts)
		}
		runs[parts[i].id] = run{i, j - i}
		i = j
	}
	return func(tp topicPartition) (int, bool) {
		r, ok := runs[tp.id]
		if !ok || tp.partition < 0 || int(tp.partition) >= r.n {
			return 0, false
		}
		return r.start + int(tp.partition), true
	}
}

// poolShares is how many members should share each of p partitions
// (desiredSharing, at most maxSharing unless 0) and each of m members'
// quota of partitions, by position.
func poolShares(m, p, maxSharing int) (sharing int, quota []int) {
	sharing = (m + p - 1) / p
	if maxSharing > 0 {
		sharing = min(sharing, maxSharing)
	}
	slots := sharing * p
	// Quotas in integer arithmetic: ceil(slots*(i+1)/m) - ceil(slots*i/m).
	// Kafka computes the same in doubles; exact integers avoid an
	// off-by-one where a product rounds up past a whole number.
	ceilDiv := func(a, b int) int { return (a + b - 1) / b }
	quota = make([]int, m)
	for i := range quota {
		quota[i] = ceilDiv(slots*(i+1), m) - ceilDiv(slots*i, m)
	}
	return sharing, quota
}

func fullPartIndex(parts []topicPartition) func(topicPartition) (int, bool) {
	index := make(map[topicPartition]int, len(parts))
	for i, tp := range parts {
		index[tp] = i
	}
	return func(tp topicPartition) (int, bool) {
		i, ok := index[tp]
		return i, ok
	}
}
