package broker

// Fetch (key 1), v4-v18: every version whose records are magic-2 batches.
//
//   - Each partition returns whole stored batches starting with the one that
//     holds FetchOffset (clients skip the records before it), up to
//     PartitionMaxBytes, and the response up to min(MaxBytes,
//     fetch.max.bytes). The first batch of the first partition with data is
//     returned even when it alone is larger (KIP-74), so a consumer always
//     progresses.
//   - An offset below the log start or above the high watermark answers
//     OFFSET_OUT_OF_RANGE with the partition's bounds.
//   - The request waits up to MaxWaitMs, on the broker clock, until MinBytes
//     are available; appends to any fetched partition wake it early. A
//     partition error, a request naming no partitions, or the broker
//     shutting down answers at once.
//   - Fetch sessions (KIP-227) are not created: the answer's SessionID is 0,
//     which clients take as "send full fetch requests". A request that names
//     a session ID gets FETCH_SESSION_ID_NOT_FOUND.
//   - Topics are named up to v12 and identified by topic ID from v13.
//   - CurrentLeaderEpoch (v9+), unless -1, must be the partition's leader
//     epoch: older answers FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH
//     (epoch-check). A node that does not lead the partition answers
//     NOT_LEADER_OR_FOLLOWER (not-leader) to a fetch before v11 and to a
//     follower broker's; from v11 a consumer's fetch is served by any
//     replica from the shared log, PreferredReadReplica -1
//     (fetch-from-follower). From v16 both errors carry the current leader
//     and epoch, and the answer the leaders' NodeEndpoints (KIP-951).
//   - Authorization (docs/security.md, api-authorization): a consumer
//     needs READ on each topic, a follower broker (replica ID >= 0)
//     CLUSTER_ACTION on CLUSTER; a refused topic's partitions answer
//     TOPIC_AUTHORIZATION_FAILED, after only an unknown topic ID.
//   - IsolationLevel 1 (read_committed) returns batches only below the last
//     stable offset and lists the aborted transactions overlapping them
//     (read-committed-fetch); LastStableOffset is always the LSO.

import (
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/internal/longpoll"
	"github.com/sharebroker/sharebroker/storage"
	"github.com/sharebroker/sharebroker/wire"
)

func init() { register(1, 4, 18, handleFetch) }

func handleFetch(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.FetchRequest)
	if req.SessionID != 0 {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return resp, nil
	}
	maxBytes := b.cfg.props.Int32("fetch.max.bytes")
	if req.MaxBytes > 0 {
		maxBytes = min(maxBytes, req.MaxBytes)
	}
	wait := time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond
	deadline := b.clock.Now().Add(wait)

	// Authorization is decided once, not per long-poll attempt; nil when
	// it is off.
	var denied []bool
	if b.authz != nil {
		denied = r.fetchDenied(req)
	}
	var resp *wire.FetchResponse
	longpoll.Poll(b.serveCtx, b.clock, deadline, func(wake chan<- struct{}) (bool, func()) {
		watched := b.fetchPartitions(req, func(p *storage.Partition) { p.Watch(wake) })
		var bytes int64
		var failed bool
		resp, bytes, failed = b.fetchOnce(req, r.conn, maxBytes, denied)
		// Nothing to watch (a request naming no partitions) answers at
		// once, as in Kafka: no append could ever wake it.
		done := failed || len(watched) == 0 || bytes >= int64(req.MinBytes)
		return done, func() {
			for _, p := range watched {
				p.Unwatch(wake)
			}
		}
	}, nil)
	return resp, nil
}

// fetchPartitions calls fn for every existing partition the request names
// and returns them.
func (b *Broker) fetchPartitions(req *kmsg.FetchRequest, fn func(*storage.Partition)) []*storage.Partition {
	var ps []*storage.Partition
	for i := range req.Topics {
		t := b.fetchTopic(req, &req.Topics[i])
		if t == nil {
			continue
		}
		for _, rp := range req.Topics[i].Partitions {
			if p := t.Partition(rp.Partition); p != nil {
				fn(p)
				ps = append(ps, p)
			}
		}
	}
	return ps
}

func (b *Broker) fetchTopic(req *kmsg.FetchRequest, rt *kmsg.FetchRequestTopic) *storage.Topic {
	if req.Version >= 13 {
		return b.store.TopicByID(rt.TopicID)
	}
	return b.store.Topic(rt.Topic)
}

// fetchDenied is, per requested topic, whether the principal may not
// fetch it, as KafkaApis.handleFetchRequest decides: a follower broker's
// fetch (replica ID >= 0) needs CLUSTER_ACTION on CLUSTER for all of them,
// a consumer's READ on each topic. A topic ID that names no topic is
// answered UNKNOWN_TOPIC_ID before any check.
func (r *request) fetchDenied(req *kmsg.FetchRequest) []bool {
	denied := make([]bool, len(req.Topics))
	id := req.ReplicaID
	if req.Version >= 15 {
		id = req.ReplicaState.ID
	}
	if id >= 0 {
		if !r.authorizedCluster(acl.OpClusterAction) {
			for i := range denied {
				denied[i] = true
			}
		}
		return denied
	}
	for i := range req.Topics {
		rt := &req.Topics[i]
		name := rt.Topic
		if req.Version >= 13 {
			t := r.conn.b.store.TopicByID(rt.TopicID)
			if t == nil {
				continue
			}
			name = t.Name
		}
		denied[i] = !r.authorized(acl.OpRead, acl.ResourceTopic, name)
	}
	return denied
}

// fetchOnce reads every requested partition once. It returns the response,
// the record bytes in it, and whether any partition failed. denied, nil
// with authorization off, marks the topics fetchDenied refused.
func (b *Broker) fetchOnce(req *kmsg.FetchRequest, c *conn, maxBytes int32, denied []bool) (*wire.FetchResponse, int64, bool) {
	resp := &wire.FetchResponse{FetchResponse: *req.ResponseKind().(*kmsg.FetchResponse)}
	leaders := leaderEndpoints{b: b, index: c.listenerIndex()}
	var total int64
	failed := false
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		t := b.fetchTopic(req, rt)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			sp.PreferredReadReplica = -1
			var p *storage.Partition
			if t != nil {
				p = t.Partition(rp.Partition)
			}
			switch {
			case denied != nil && denied[i]:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case t == nil && req.Version >= 13:
				sp.ErrorCode = kerr.UnknownTopicID.Code
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case b.refuseFetch(req, c.node(), t, &rp, &sp, &leaders):
			default:
				remaining := int64(maxBytes) - total
				limit := int32(min(remaining, int64(rp.PartitionMaxBytes), math.MaxInt32))
				res, err := p.ReadStreamInto(rp.FetchOffset, max(limit, 0), total == 0, req.IsolationLevel == readCommittedLevel, &c.readBuf)
				sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = res.HighWatermark, res.LastStable, res.LogStart
				if err != nil {
					sp.ErrorCode = codeFor(err)
					break
				}
				if res.Stream != nil { // fetch-from-files
					sp.RecordBatches = resp.Source(len(resp.Topics), len(st.Partitions), res.Stream)
				} else {
					sp.RecordBatches = resp.Field(len(resp.Topics), len(st.Partitions), res.Records)
				}
				for _, a := range res.Aborted {
					at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
					at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
					sp.AbortedTransactions = append(sp.AbortedTransactions, at)
				}
				total += int64(res.Len())
			}
			if sp.ErrorCode != 0 {
				failed = true
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	leaders.each(func(node int32, ep endpoint) {
		ne := kmsg.NewFetchResponseBroker()
		ne.NodeID, ne.Host, ne.Port = node, ep.host, ep.port
		resp.Brokers = append(resp.Brokers, ne)
	})
	return resp, total, failed
}

// refuseFetch answers a partition whose epoch check fails, or that node
// does not lead when the fetch must be served by the leader; from v16 the answer names the current leader, as Kafka's
// KafkaApis.handleFetchRequest does for NOT_LEADER_OR_FOLLOWER and
// FENCED_LEADER_EPOCH. It reports whether it answered.
func (b *Broker) refuseFetch(req *kmsg.FetchRequest, node int32, t *storage.Topic, rp *kmsg.FetchRequestTopicPartition, sp *kmsg.FetchResponseTopicPartition, leaders *leaderEndpoints) bool {
	epoch := rp.CurrentLeaderEpoch
	if req.Version < 9 {
		epoch = noEpoch
	}
	l, code := b.checkLeader(node, t, rp.Partition, epoch)
	if code == 0 || (code == kerr.NotLeaderForPartition.Code && !fetchOnlyLeader(req)) {
		return false
	}
	sp.ErrorCode = code
	if req.Version >= 16 && (code == kerr.NotLeaderForPartition.Code || code == kerr.FencedLeaderEpoch.Code) {
		sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = l.Leader, l.Epoch
		leaders.add(l.Leader)
	}
	return true
}

// consumerReplicaID is the replica ID of a consumer's fetch (Kafka's
// FetchRequest.CONSUMER_REPLICA_ID).
const consumerReplicaID = -1

// fetchOnlyLeader is Kafka's FetchParams.fetchOnlyLeader: a follower
// broker's fetch (replica ID >= 0) and a consumer's fetch without client
// metadata (before v11, KafkaApis.handleFetchRequest) must be served by
// the leader; a consumer's v11+ fetch may be served by any replica, with
// or without a replica selector (docs/cluster.md fetch-from-follower).
func fetchOnlyLeader(req *kmsg.FetchRequest) bool {
	id := req.ReplicaID
	if req.Version >= 15 {
		id = req.ReplicaState.ID
	}
	return id >= 0 || (id == consumerReplicaID && req.Version < 11)
}
