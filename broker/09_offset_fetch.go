package broker

// OffsetFetch (key 9), v0-v10.
//
//   - Every requested partition is answered: its committed offset, leader
//     epoch (v5+) and metadata, or -1 with no error (groups.md fetch). A
//     group that does not exist has no commits; a share group's ID answers
//     GROUP_ID_NOT_FOUND (one-kind).
//   - v2+: null topics means every partition the group committed; the
//     group's error is also answered at the top (v2-v7). v0-v1 carry it on
//     every partition.
//   - v7+ RequireStable: a partition with a pending transactional commit
//     answers UNSTABLE_OFFSET_COMMIT, and the client retries
//     (require-stable), in classic and KIP-848 groups alike.
//   - v8+ carries several groups, each answered with its own error; v10
//     names topics by ID (UNKNOWN_TOPIC_ID for an ID no topic has).
//   - v9's member ID and epoch are checked for KIP-848 consumer groups
//     (unknown member UNKNOWN_MEMBER_ID, another epoch STALE_MEMBER_EPOCH),
//     not for classic ones; a null member ID with a negative epoch is an
//     admin fetch.
//   - Metadata is never null: a partition with no commit, or answered with
//     an error, carries "" (OffsetFetchResponse.NO_METADATA), as in Kafka
//     (answers-as-kafka).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/cluster"

	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/storage"
)

func init() { register(9, 0, 10, handleOffsetFetch) }

func handleOffsetFetch(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version < 8 {
		var topics []group.OffsetPartitions
		if req.Topics != nil || req.Version < 2 {
			topics = make([]group.OffsetPartitions, 0, len(req.Topics))
			for _, rt := range req.Topics {
				topics = append(topics, group.OffsetPartitions{Topic: rt.Topic, Partitions: rt.Partitions})
			}
		}
		err := b.notCoordinator(r.conn, cluster.Group, req.Group)
		var fetched []group.FetchedTopic
		if err == nil {
			fetched, err = b.fetchOffsets(req.Group, nil, -1, topics, req.Version >= 7 && req.RequireStable)
		}
		resp.ErrorCode = codeFor(err)
		if err != nil {
			if req.Version < 2 {
				// No top-level error before v2: each partition says it.
				for _, rt := range req.Topics {
					t := kmsg.NewOffsetFetchResponseTopic()
					t.Topic = rt.Topic
					for _, p := range rt.Partitions {
						fp := kmsg.NewOffsetFetchResponseTopicPartition()
						fp.Partition, fp.Offset, fp.ErrorCode = p, -1, codeFor(err)
						fp.Metadata = kmsg.StringPtr("")
						t.Partitions = append(t.Partitions, fp)
					}
					resp.Topics = append(resp.Topics, t)
				}
			}
			return resp, nil
		}
		for _, ft := range fetched {
			t := kmsg.NewOffsetFetchResponseTopic()
			t.Topic = ft.Topic
			for _, p := range ft.Partitions {
				fp := kmsg.NewOffsetFetchResponseTopicPartition()
				fp.Partition, fp.Offset, fp.LeaderEpoch, fp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, codeFor(p.Err)
				fp.Metadata = kmsg.StringPtr(p.Metadata)
				t.Partitions = append(t.Partitions, fp)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil
	}
	for _, rg := range req.Groups {
		resp.Groups = append(resp.Groups, b.fetchGroupOffsets(r.conn, req.Version, req.RequireStable, rg))
	}
	return resp, nil
}

// fetchGroupOffsets answers one group of OffsetFetch v8+, its topics in
// request order.
func (b *Broker) fetchGroupOffsets(c *conn, version int16, requireStable bool, rg kmsg.OffsetFetchRequestGroup) kmsg.OffsetFetchResponseGroup {
	g := kmsg.NewOffsetFetchResponseGroup()
	g.Group = rg.Group
	if err := b.notCoordinator(c, cluster.Group, rg.Group); err != nil {
		g.ErrorCode = codeFor(err)
		return g
	}
	var topics []group.OffsetPartitions
	known := make([]bool, len(rg.Topics)) // v10: whether a topic has the ID
	if rg.Topics != nil {
		topics = make([]group.OffsetPartitions, 0, len(rg.Topics))
		for i, rt := range rg.Topics {
			name, ok := rt.Topic, true
			if version >= 10 {
				name, ok = b.topicNameByID(rt.TopicID)
			}
			if known[i] = ok; ok {
				topics = append(topics, group.OffsetPartitions{Topic: name, Partitions: rt.Partitions})
			}
		}
	}
	var memberID *string
	if version >= 9 {
		memberID = rg.MemberID
	}
	fetched, err := b.fetchOffsets(rg.Group, memberID, rg.MemberEpoch, topics, requireStable)
	if err != nil {
		g.ErrorCode = codeFor(err)
		return g
	}
	answer := func(ft group.FetchedTopic) {
		t := kmsg.NewOffsetFetchResponseGroupTopic()
		t.Topic = ft.Topic
		if version >= 10 {
			st := b.store.Topic(ft.Topic)
			if st == nil {
				return // deleted since the commit: no ID names it
			}
			t.TopicID = st.ID
		}
		for _, p := range ft.Partitions {
			fp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			fp.Partition, fp.Offset, fp.LeaderEpoch, fp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, codeFor(p.Err)
			fp.Metadata = kmsg.StringPtr(p.Metadata)
			t.Partitions = append(t.Partitions, fp)
		}
		g.Topics = append(g.Topics, t)
	}
	if rg.Topics == nil {
		for _, ft := range fetched {
			answer(ft)
		}
		return g
	}
	next := 0
	for i, rt := range rg.Topics {
		if known[i] {
			answer(fetched[next])
			next++
			continue
		}
		t := kmsg.NewOffsetFetchResponseGroupTopic()
		t.TopicID = rt.TopicID
		for _, p := range rt.Partitions {
			fp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			fp.Partition, fp.Offset, fp.ErrorCode = p, -1, codeFor(storage.ErrUnknownTopicID)
			fp.Metadata = kmsg.StringPtr("")
			t.Partitions = append(t.Partitions, fp)
		}
		g.Topics = append(g.Topics, t)
	}
	return g
}

// fetchOffsets reads a group's committed offsets from the coordinator of
// its type; memberID and epoch are checked for consumer groups only.
func (b *Broker) fetchOffsets(groupID string, memberID *string, epoch int32, topics []group.OffsetPartitions, requireStable bool) ([]group.FetchedTopic, error) {
	if t, _ := b.groupRegistry.TypeOf(groupID); t == group.TypeConsumer {
		return b.consumerGroups.Fetch(groupID, memberID, epoch, topics, requireStable)
	}
	return b.classicGroups.FetchStable(groupID, topics, requireStable)
}
