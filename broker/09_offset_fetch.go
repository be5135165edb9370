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
//   - Authorization (docs/security.md api-authorization): DESCRIBE on each
//     group (else GROUP_AUTHORIZATION_FAILED), DESCRIBE on each topic: named
//     ones refused answer TOPIC_AUTHORIZATION_FAILED after the others, all-
//     partitions leaves them out.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"

	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/storage"
)

func init() { register(9, 0, 10, handleOffsetFetch) }

func handleOffsetFetch(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version < 8 {
		var topics []group.OffsetPartitions
		// Named topics the principal may not DESCRIBE are answered after
		// the others and never reach the group.
		var refused []kmsg.OffsetFetchResponseTopic
		groupErr := b.groupGate(r, acl.OpDescribe, req.Group)
		if req.Topics != nil || req.Version < 2 {
			topics = make([]group.OffsetPartitions, 0, len(req.Topics))
			for _, rt := range req.Topics {
				if groupErr == nil && !r.authorized(acl.OpDescribe, acl.ResourceTopic, rt.Topic) {
					t := kmsg.NewOffsetFetchResponseTopic()
					t.Topic = rt.Topic
					for _, p := range rt.Partitions {
						fp := kmsg.NewOffsetFetchResponseTopicPartition()
						fp.Partition, fp.Offset, fp.ErrorCode = p, -1, kerr.TopicAuthorizationFailed.Code
						fp.Metadata = kmsg.StringPtr("")
						t.Partitions = append(t.Partitions, fp)
					}
					refused = append(refused, t)
					continue
				}
				topics = append(topics, group.OffsetPartitions{Topic: rt.Topic, Partitions: rt.Partitions})
			}
		}
		err := groupErr
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
			if topics == nil && !r.authorized(acl.OpDescribe, acl.ResourceTopic, ft.Topic) {
				continue // all partitions: a topic it may not describe is left out
			}
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
		resp.Topics = append(resp.Topics, refused...)
		return resp, nil
	}
	for _, rg := range req.Groups {
		resp.Groups = append(resp.Groups, b.fetchGroupOffsets(r, req.Version, req.RequireStable, rg))
	}
	return resp, nil
}

// fetchGroupOffsets answers one group of OffsetFetch v8+, its topics in
// request order.
func (b *Broker) fetchGroupOffsets(r *request, version int16, requireStable bool, rg kmsg.OffsetFetchRequestGroup) (g kmsg.OffsetFetchResponseGroup) {
	// g is named: the deferred append of refused topics below changes
	// what is returned.
	g = kmsg.NewOffsetFetchResponseGroup()
	g.Group = rg.Group
	if err := b.groupGate(r, acl.OpDescribe, rg.Group); err != nil {
		g.ErrorCode = codeFor(err)
		return g
	}
	var topics []group.OffsetPartitions
	known := make([]bool, len(rg.Topics)) // v10: whether a topic has the ID
	// Named topics the principal may not DESCRIBE answer
	// TOPIC_AUTHORIZATION_FAILED after the others (KafkaApis
	// fetchOffsetsForGroup); denied[i] marks them.
	denied := make([]bool, len(rg.Topics))
	var refused []kmsg.OffsetFetchResponseGroupTopic
	if rg.Topics != nil {
		topics = make([]group.OffsetPartitions, 0, len(rg.Topics))
		for i, rt := range rg.Topics {
			name, ok := rt.Topic, true
			if version >= 10 {
				name, ok = b.store.TopicName(rt.TopicID)
			}
			if ok && !r.authorized(acl.OpDescribe, acl.ResourceTopic, name) {
				denied[i] = true
				t := kmsg.NewOffsetFetchResponseGroupTopic()
				t.Topic, t.TopicID = rt.Topic, rt.TopicID
				for _, p := range rt.Partitions {
					fp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					fp.Partition, fp.Offset, fp.ErrorCode = p, -1, kerr.TopicAuthorizationFailed.Code
					fp.Metadata = kmsg.StringPtr("")
					t.Partitions = append(t.Partitions, fp)
				}
				refused = append(refused, t)
				continue
			}
			if known[i] = ok; ok {
				topics = append(topics, group.OffsetPartitions{Topic: name, Partitions: rt.Partitions})
			}
		}
	}
	defer func() {
		if g.ErrorCode == 0 {
			g.Topics = append(g.Topics, refused...)
		}
	}()
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
			// All partitions: a topic it may not describe is left out.
			if r.authorized(acl.OpDescribe, acl.ResourceTopic, ft.Topic) {
				answer(ft)
			}
		}
		return g
	}
	next := 0
	for i, rt := range rg.Topics {
		if denied[i] {
			continue
		}
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
