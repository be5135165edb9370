package broker

// ListOffsets (key 2), v1-v11.
//
//   - Timestamp -2 (earliest) answers the log start offset, -1 (latest) the
//     high watermark, or the last stable offset under read_committed (v2+).
//     -4 (earliest local) is the log start and -5 (latest tiered) is -1:
//     nothing is tiered.
//   - -3 (max timestamp, v7+) answers the offset of the record with the
//     largest timestamp, and that timestamp; the first such record on a tie.
//   - Any other timestamp answers the first offset whose record is stamped
//     at or after it, or offset -1 with timestamp -1 when none is.
//   - Both lookups are exact to the record: storage opens (and decompresses)
//     the batches a batch header cannot rule out. A log-append-time batch
//     stamps every record with the time it was appended.
//   - CurrentLeaderEpoch (v4+), unless -1, must be the partition's leader
//     epoch: older answers FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH
//     (epoch-check); then a node that does not lead the partition answers
//     NOT_LEADER_OR_FOLLOWER (not-leader).
//   - LeaderEpoch is the epoch the answered offset was appended in
//     (epoch-history): the latest epoch for the high watermark or LSO, the
//     epoch holding the offset otherwise, -1 with no offset.
//   - Authorization: DESCRIBE on each topic, else its partitions answer
//     TOPIC_AUTHORIZATION_FAILED, checked first; refused topics follow the
//     others, as Kafka merges them (docs/security.md api-authorization).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
)

// Special ListOffsets timestamps.
const (
	listLatest         = -1
	listEarliest       = -2
	listMaxTimestamp   = -3
	listEarliestLocal  = -4
	listLatestTiered   = -5
	readCommittedLevel = 1
)

func init() { register(2, 1, 11, handleListOffsets) }

func handleListOffsets(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	// Refused topics come after the others, as Kafka merges them
	// (KafkaApis.handleListOffsetRequest).
	var refused []kmsg.ListOffsetsResponseTopic
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		if !r.authorized(acl.OpDescribe, acl.ResourceTopic, rt.Topic) {
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.TopicAuthorizationFailed.Code
				sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
				st.Partitions = append(st.Partitions, sp)
			}
			refused = append(refused, st)
			continue
		}
		t := b.store.Topic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			if t == nil || t.Partition(rp.Partition) == nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			epoch := rp.CurrentLeaderEpoch
			if req.Version < 4 {
				epoch = noEpoch
			}
			if _, code := b.checkLeader(r.conn.node(), t, rp.Partition, epoch); code != 0 {
				sp.ErrorCode = code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			p := t.Partition(rp.Partition)
			offs := p.Offsets()
			switch rp.Timestamp {
			case listEarliest, listEarliestLocal:
				sp.Offset = offs.LogStart
			case listLatest:
				sp.Offset = offs.HighWatermark
				if req.IsolationLevel == readCommittedLevel {
					sp.Offset = offs.LastStable
				}
			case listLatestTiered:
				sp.Offset = -1
			case listMaxTimestamp:
				if off, ts, ok := p.MaxTimestamp(); ok {
					sp.Offset, sp.Timestamp = off, ts
				}
			default:
				if off, ts, ok := p.OffsetForTimestamp(rp.Timestamp); ok {
					sp.Offset, sp.Timestamp = off, ts
				}
			}
			if sp.Offset >= 0 {
				sp.LeaderEpoch = p.EpochForOffset(sp.Offset) // the latest offset: the current epoch
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	resp.Topics = append(resp.Topics, refused...)
	return resp, nil
}
