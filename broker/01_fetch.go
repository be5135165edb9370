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
//   - Fetch sessions (KIP-227) from v7, kept per node by package
//     fetchsession (docs/log.md, fetch sessions): epoch 0 creates one
//     holding the request's partitions when one of
//     max.incremental.fetch.session.cache.slots is free or can be freed,
//     epoch -1 fetches without one; later epochs add, update and forget
//     partitions, and the answer lists only the partitions with something
//     new. A session error answers the whole request with its code and no
//     partitions.
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
	"github.com/sharebroker/sharebroker/fetchsession"
	"github.com/sharebroker/sharebroker/internal/longpoll"
	"github.com/sharebroker/sharebroker/storage"
	"github.com/sharebroker/sharebroker/wire"
)

func init() { register(1, 4, 18, handleFetch) }

func handleFetch(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.FetchRequest)
	sessions := b.fetchSessionsOf(r.conn.node())
	fctx := sessions.NewContext(b.clock.Now(), fetchSessionRequest(req))
	if err := fctx.Err(); err != nil {
		return fetchSessionError(req, fetchsession.NoSession, err), nil
	}
	if fctx.Incremental() {
		req = sessionFetch(req, fctx.Partitions())
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
	answers := make([]fetchsession.Answer, len(fctx.Partitions()))
	longpoll.Poll(b.serveCtx, b.clock, deadline, func(wake chan<- struct{}) (bool, func()) {
		watched := b.fetchPartitions(req, func(p *storage.Partition) { p.Watch(wake) })
		var bytes int64
		var failed bool
		resp, bytes, failed = b.fetchOnce(req, r.conn, maxBytes, denied, fctx, answers)
		// Nothing to watch (a request naming no partitions) answers at
		// once, as in Kafka: no append could ever wake it.
		done := failed || len(watched) == 0 || bytes >= int64(req.MinBytes)
		return done, func() {
			for _, p := range watched {
				p.Unwatch(wake)
			}
		}
	}, nil)
	id, _, err := fctx.Finish(b.clock.Now(), answers)
	if err != nil {
		return fetchSessionError(req, id, err), nil
	}
	resp.SessionID = id
	return resp, nil
}

// newFetchSessions makes each node's cache of Fetch sessions: a session
// belongs to the broker that made it, as in Kafka, so another node of the
// cluster answers its ID FETCH_SESSION_ID_NOT_FOUND.
func newFetchSessions(nodes, slots int) []*fetchsession.Cache {
	caches := make([]*fetchsession.Cache, max(nodes, 1))
	for i := range caches {
		caches[i] = fetchsession.NewCache(slots)
	}
	return caches
}

// fetchSessionsOf is the session cache of node; an unknown node (a
// connection made without a listener) uses the first node's.
func (b *Broker) fetchSessionsOf(node int32) *fetchsession.Cache {
	if i, ok := b.nodeIndex(node); ok && i < len(b.fetchSessions) {
		return b.fetchSessions[i]
	}
	return b.fetchSessions[0]
}

// fetchSessionRequest is what the session rules read of a Fetch request:
// its session fields, its partitions in order and the forgotten ones, keyed
// by topic ID from v13 and by name before.
func fetchSessionRequest(req *kmsg.FetchRequest) fetchsession.Request {
	ids := req.Version >= 13
	key := func(name string, id [16]byte, p int32) fetchsession.Key {
		if ids {
			return fetchsession.Key{ID: id, Partition: p}
		}
		return fetchsession.Key{Name: name, Partition: p}
	}
	out := fetchsession.Request{Version: req.Version, SessionID: req.SessionID, Epoch: req.SessionEpoch}
	for i := range req.Topics {
		rt := &req.Topics[i]
		for _, rp := range rt.Partitions {
			out.Partitions = append(out.Partitions, fetchsession.Requested{
				Key: key(rt.Topic, rt.TopicID, rp.Partition),
				Params: fetchsession.Params{FetchOffset: rp.FetchOffset, LogStartOffset: rp.LogStartOffset,
					MaxBytes: rp.PartitionMaxBytes, CurrentLeaderEpoch: rp.CurrentLeaderEpoch, LastFetchedEpoch: rp.LastFetchedEpoch},
			})
		}
	}
	for _, ft := range req.ForgottenTopics {
		for _, p := range ft.Partitions {
			out.Forgotten = append(out.Forgotten, key(ft.Topic, ft.TopicID, p))
		}
	}
	return out
}

// sessionFetch is req with its partitions replaced by the session's, in
// the session's order: consecutive partitions of one topic share a topic
// entry, and a topic met again after another makes a new entry, as
// Kafka's FetchResponse lists them.
func sessionFetch(req *kmsg.FetchRequest, parts []fetchsession.Requested) *kmsg.FetchRequest {
	out := *req
	out.Topics = nil
	out.ForgottenTopics = nil
	for i := range parts {
		p := &parts[i]
		if n := len(out.Topics); n == 0 || out.Topics[n-1].TopicID != p.ID || out.Topics[n-1].Topic != p.Name {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = p.Name, p.ID
			out.Topics = append(out.Topics, rt)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.LogStartOffset = p.Partition, p.FetchOffset, p.LogStartOffset
		rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = p.MaxBytes, p.CurrentLeaderEpoch, p.LastFetchedEpoch
		rt := &out.Topics[len(out.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	return &out
}

// fetchSessionError is the answer to a request failed by its session: the
// code at the top, no partitions (Kafka's SessionErrorContext), and the
// session ID when a session's request lost the race to another.
func fetchSessionError(req *kmsg.FetchRequest, id int32, err error) *kmsg.FetchResponse {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.ErrorCode = codeFor(err)
	resp.SessionID = id
	return resp
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
//
// answers get what each partition answered, in the order of the session
// context's partitions, and an incremental fetch's answer leaves out the
// partitions with nothing new (fetch-session-incremental).
func (b *Broker) fetchOnce(req *kmsg.FetchRequest, c *conn, maxBytes int32, denied []bool, fctx *fetchsession.Context, answers []fetchsession.Answer) (*wire.FetchResponse, int64, bool) {
	resp := &wire.FetchResponse{FetchResponse: *req.ResponseKind().(*kmsg.FetchResponse)}
	leaders := leaderEndpoints{b: b, index: c.listenerIndex()}
	var total int64
	failed := false
	n := 0 // the partition's index in answers
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
			records := false // whether the answer carries records
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
				records = res.Len() > 0 || res.Stream != nil
			}
			if sp.ErrorCode != 0 {
				failed = true
			}
			a := &answers[n]
			n++
			*a = fetchsession.Answer{Records: records, Failed: sp.ErrorCode != 0, PreferredReplica: sp.PreferredReadReplica >= 0,
				HighWatermark: sp.HighWatermark, LogStartOffset: sp.LogStartOffset}
			if fctx.Keep(n-1, a) {
				st.Partitions = append(st.Partitions, sp)
			}
		}
		if len(st.Partitions) > 0 || !fctx.Incremental() {
			resp.Topics = append(resp.Topics, st)
		}
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
