package broker

// DescribeShareGroupOffsets (key 90), v0-v1 (share-groups.md §5.1).
//
//   - Per group, per partition: StartOffset is the SPSO, LeaderEpoch 0, and
//     Lag (v1+) the records still to be delivered: high watermark minus SPSO
//     minus the records already finished (acknowledged or archived) inside
//     the in-flight window.
//   - A partition without share state answers StartOffset -1 and Lag -1 with
//     no error; an unknown topic answers its partitions the same way with a
//     zero topic ID. A group that does not exist is not an error: it simply
//     has no state, as in Kafka.
//   - Topics null asks for everything: every partition with share state,
//     and every partition of a topic a member subscribes to (StartOffset -1
//     when never read). Topics empty answers the group with no topics.

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(90, 0, 1, handleDescribeShareGroupOffsets) }

func handleDescribeShareGroupOffsets(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	for _, rg := range req.Groups {
		g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		g.GroupID = rg.GroupID
		wanted := rg.Topics
		if wanted == nil {
			wanted = b.shareOffsetTopics(rg.GroupID)
		}
		for _, rt := range wanted {
			st := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			st.Topic = rt.Topic
			t := b.store.Topic(rt.Topic)
			if t != nil {
				st.TopicID = t.ID
			}
			for _, idx := range rt.Partitions {
				sp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				sp.Partition = idx
				sp.StartOffset, sp.Lag = -1, -1
				if t != nil {
					if p := b.shareParts.lookup(sharePartitionKey{group: rg.GroupID, topicPartition: topicPartition{topicID: t.ID, partition: idx}}); p != nil {
						sp.StartOffset, sp.Lag = shareLag(p)
					}
				}
				st.Partitions = append(st.Partitions, sp)
			}
			g.Topics = append(g.Topics, st)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}

// shareLag returns a share partition's SPSO and its lag.
func shareLag(p *sharePart) (spso, lag int64) {
	snap := p.sp.Snapshot()
	if !snap.Initialized {
		return -1, -1
	}
	finished := int64(0)
	for _, rs := range snap.Ranges {
		if rs.State.Terminal() {
			first := max(rs.FirstOffset, snap.SPSO)
			if rs.LastOffset >= first {
				finished += rs.LastOffset - first + 1
			}
		}
	}
	hw := p.log.Offsets().HighWatermark
	return snap.SPSO, max(hw-snap.SPSO-finished, 0)
}

// shareOffsetTopics lists, for describe-all, every topic partition of the
// group that has share state or that a member subscribes to, by topic name
// in order.
func (b *Broker) shareOffsetTopics(groupID string) []kmsg.DescribeShareGroupOffsetsRequestGroupTopic {
	parts := make(map[string][]int32)
	for key := range b.shareParts.keysOfGroup(groupID) {
		if t := b.store.TopicByID(key.topicID); t != nil {
			parts[t.Name] = append(parts[t.Name], key.partition)
		}
	}
	for _, d := range b.shareGroups.Describe([]string{groupID}) {
		for _, m := range d.Members {
			for _, name := range m.SubscribedTopicNames {
				if t := b.store.Topic(name); t != nil {
					for _, p := range t.Partitions() {
						parts[name] = append(parts[name], p.Index)
					}
				}
			}
		}
	}
	var out []kmsg.DescribeShareGroupOffsetsRequestGroupTopic
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		rt.Topic = name
		rt.Partitions = slices.Compact(slices.Sorted(slices.Values(parts[name])))
		out = append(out, rt)
	}
	return out
}
