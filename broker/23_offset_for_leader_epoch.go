package broker

// OffsetForLeaderEpoch (key 23), v2-v4.
//
// Clients use it to detect log truncation after a leader change: "where did
// epoch E end?". Each partition keeps its leader-epoch history (storage's
// epochs.go, docs/cluster.md epoch-history); with one node that never
// moved a leader, the only epoch is 0 and it starts at offset 0.
//
//   - CurrentLeaderEpoch, unless -1, must be the partition's leader epoch:
//     older answers FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH
//     (epoch-check); then a node that does not lead the partition answers
//     NOT_LEADER_OR_FOLLOWER (not-leader).
//   - LeaderEpoch is answered as Kafka's LeaderEpochFileCache.endOffsetFor
//     does: the current epoch ends at the log end offset (our high
//     watermark); an older one answers the largest known epoch at or below
//     it and the start of the next higher known epoch; one below every
//     known epoch answers itself and the first known epoch's start; -1 or
//     an epoch above the current one answers epoch -1 and end offset -1,
//     all with no error.
//   - An unknown topic or partition answers UNKNOWN_TOPIC_OR_PARTITION.
//   - ReplicaID (v3+) is not checked: we have no followers, and consumers
//     send -1.
//   - Authorization: CLUSTER_ACTION on CLUSTER, or DESCRIBE on each topic;
//     a refused topic's partitions answer TOPIC_AUTHORIZATION_FAILED and
//     follow the others (docs/security.md api-authorization).
//
// v0-v1 are left out: they lack CurrentLeaderEpoch, and kgo uses the API
// only from v2.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
)

func init() { register(23, 2, 4, handleOffsetForLeaderEpoch) }

func handleOffsetForLeaderEpoch(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	// CLUSTER_ACTION (a follower broker's permission, asked quietly)
	// covers every topic; else each needs DESCRIBE, and refused topics
	// follow the others, as in KafkaApis.handleOffsetForLeaderEpochRequest.
	cluster := r.authorizedQuietly(acl.OpClusterAction, acl.ResourceCluster, acl.ClusterName)
	var refused []kmsg.OffsetForLeaderEpochResponseTopic
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		if !cluster && !r.authorized(acl.OpDescribe, acl.ResourceTopic, rt.Topic) {
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.TopicAuthorizationFailed.Code
				sp.LeaderEpoch, sp.EndOffset = -1, -1
				st.Partitions = append(st.Partitions, sp)
			}
			refused = append(refused, st)
			continue
		}
		t := b.store.Topic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			if t == nil || t.Partition(rp.Partition) == nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else if _, code := b.checkLeader(r.conn.node(), t, rp.Partition, rp.CurrentLeaderEpoch); code != 0 {
				sp.ErrorCode = code
			} else {
				sp.LeaderEpoch, sp.EndOffset = t.Partition(rp.Partition).EndOffsetForEpoch(rp.LeaderEpoch)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	resp.Topics = append(resp.Topics, refused...)
	return resp, nil
}
