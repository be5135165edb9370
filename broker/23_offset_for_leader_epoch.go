package broker

// OffsetForLeaderEpoch (key 23), v2-v4.
//
// Clients use it to detect log truncation after a leader change: "where did
// epoch E end?". We are one node that has led every partition since it was
// created, so the only leader epoch is 0 and it starts at offset 0.
//
//   - LeaderEpoch 0 answers epoch 0 with the log end offset (our high
//     watermark).
//   - Any other LeaderEpoch, -1 (undefined) or one we never had, answers
//     no error with epoch -1 and end offset -1, as Kafka's
//     LeaderEpochFileCache.endOffsetFor does for an undefined epoch or one
//     above the latest.
//   - CurrentLeaderEpoch above 0 answers UNKNOWN_LEADER_EPOCH (the client
//     knows of a newer leader than us); -1 and 0 pass. Nothing is below 0, so
//     FENCED_LEADER_EPOCH cannot happen.
//   - An unknown topic or partition answers UNKNOWN_TOPIC_OR_PARTITION.
//   - ReplicaID (v3+) is not checked: we have no followers, and consumers
//     send -1.
//
// v0-v1 are left out: they lack CurrentLeaderEpoch, and kgo uses the API
// only from v2.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(23, 2, 4, handleOffsetForLeaderEpoch) }

// ourLeaderEpoch is the leader epoch of every partition we serve.
const ourLeaderEpoch = 0

func handleOffsetForLeaderEpoch(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		t := b.store.Topic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			switch {
			case t == nil || t.Partition(rp.Partition) == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case rp.CurrentLeaderEpoch > ourLeaderEpoch:
				sp.ErrorCode = kerr.UnknownLeaderEpoch.Code
			case rp.LeaderEpoch == ourLeaderEpoch:
				sp.LeaderEpoch = ourLeaderEpoch
				sp.EndOffset = t.Partition(rp.Partition).Offsets().HighWatermark
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
