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
//     partition error, a fetch reading no partitions, or the broker
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
	defer fctx.Release()
	// What is read: the request's partitions, or for an incremental fetch
	// the session's, with the parameters it keeps.
	f := &fetchPlan{b: b, req: req, parts: fctx.Partitions(), fctx: fctx}
	maxBytes := b.cfg.props.Int32("fetch.max.bytes")
	if req.MaxBytes > 0 {
		maxBytes = min(maxBytes, req.MaxBytes)
	}
	wait := time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond
	deadline := b.clock.Now().Add(wait)

	// Authorization is decided once, not per long-poll attempt; nil when
	// it is off.
	if b.authz != nil {
		f.denied = r.fetchDenied(f)
	}
	var resp *wire.FetchResponse
	answers := fctx.Answers()
	var watched []*storage.Partition
	registered := false
	longpoll.Poll(b.serveCtx, b.clock, deadline, func(wake chan<- struct{}) (bool, func()) {
		// A fetch that can be answered at once (most, while a consumer is
		// behind) registers no wake-up on its partitions: only one about
		// to park does, and then reads again, so that an append between
		// the first read and the registration is not missed. One whose
		// wait is over (MaxWaitMs 0) parks no more.
		if !registered {
			if f.attempt(r.conn, maxBytes, answers, &resp) || !b.clock.Now().Before(deadline) {
				return true, func() {}
			}
			registered = true
		}
		watched = f.partitions(watched[:0], func(p *storage.Partition) { p.Watch(wake) })
		return f.attempt(r.conn, maxBytes, answers, &resp), func() {
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
	n := 0
	for i := range req.Topics {
		n += len(req.Topics[i].Partitions)
	}
	out.Partitions = make([]fetchsession.Requested, 0, n)
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

// fetchSessionError is the answer to a request failed by its session: the
// code at the top, no partitions (Kafka's SessionErrorContext), and the
// session ID when a session's request lost the race to another.
func fetchSessionError(req *kmsg.FetchRequest, id int32, err error) *kmsg.FetchResponse {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.ErrorCode = codeFor(err)
	resp.SessionID = id
	return resp
}

// fetchPlan is one Fetch request's partitions to read, in the order the
// answer lists them. Consecutive partitions of one topic make one topic
// entry of the answer, and a topic met again after another a new entry,
// as Kafka's FetchResponse lists a session's partitions.
type fetchPlan struct {
	b     *Broker
	req   *kmsg.FetchRequest
	parts []fetchsession.Requested
	fctx  *fetchsession.Context
	// denied marks the partitions whose topic the principal may not
	// fetch (fetchDenied); nil with authorization off.
	denied []bool
}

// topicRuns calls fn for each run of consecutive partitions of one topic:
// parts[i:j] and the topic, nil when it does not exist.
func (f *fetchPlan) topicRuns(fn func(i, j int, t *storage.Topic)) {
	for i := 0; i < len(f.parts); {
		j := i + 1
		for j < len(f.parts) && f.parts[j].ID == f.parts[i].ID && f.parts[j].Name == f.parts[i].Name {
			j++
		}
		var t *storage.Topic
		if f.req.Version >= 13 {
			t = f.b.store.TopicByID(f.parts[i].ID)
		} else {
			t = f.b.store.Topic(f.parts[i].Name)
		}
		fn(i, j, t)
		i = j
	}
}

// partitions appends to ps every existing partition of the plan, calling
// fn for each.
func (f *fetchPlan) partitions(ps []*storage.Partition, fn func(*storage.Partition)) []*storage.Partition {
	f.topicRuns(func(i, j int, t *storage.Topic) {
		if t == nil {
			return
		}
		for _, rp := range f.parts[i:j] {
			if p := t.Partition(rp.Partition); p != nil {
				fn(p)
				ps = append(ps, p)
			}
		}
	})
	return ps
}

// fetchDenied is, per partition of the plan, whether the principal may not
// fetch its topic, as KafkaApis.handleFetchRequest decides: a follower
// broker's fetch (replica ID >= 0) needs CLUSTER_ACTION on CLUSTER for all
// of them, a consumer's READ on each topic. A topic ID that names no topic
// is answered UNKNOWN_TOPIC_ID before any check.
func (r *request) fetchDenied(f *fetchPlan) []bool {
	denied := make([]bool, len(f.parts))
	id := f.req.ReplicaID
	if f.req.Version >= 15 {
		id = f.req.ReplicaState.ID
	}
	if id >= 0 {
		if !r.authorizedCluster(acl.OpClusterAction) {
			for i := range denied {
				denied[i] = true
			}
		}
		return denied
	}
	f.topicRuns(func(i, j int, t *storage.Topic) {
		name := f.parts[i].Name
		if f.req.Version >= 13 {
			if t == nil {
				return
			}
			name = t.Name
		}
		if !r.authorized(acl.OpRead, acl.ResourceTopic, name) {
			for k := i; k < j; k++ {
				denied[k] = true
			}
		}
	})
	return denied
}

// attempt reads the plan once into *resp and reports whether the answer
// is ready: a partition failed, MinBytes are there, or the plan reads no
// partitions, which answers at once as in Kafka (no append could ever
// wake it; a request whose partitions all do not exist fails).
func (f *fetchPlan) attempt(c *conn, maxBytes int32, answers []fetchsession.Answer, resp **wire.FetchResponse) bool {
	r, bytes, failed := f.once(c, maxBytes, answers)
	*resp = r
	return failed || len(f.parts) == 0 || bytes >= int64(f.req.MinBytes)
}

// once reads every partition of the plan once. It returns the response,
// the record bytes in it, and whether any partition failed; answers[i]
// gets what partition i answered, and an incremental fetch's answer leaves
// out the partitions with nothing new (fetch-session-incremental).
func (f *fetchPlan) once(c *conn, maxBytes int32, answers []fetchsession.Answer) (*wire.FetchResponse, int64, bool) {
	b, req := f.b, f.req
	resp := &wire.FetchResponse{FetchResponse: *req.ResponseKind().(*kmsg.FetchResponse)}
	leaders := leaderEndpoints{b: b, index: c.listenerIndex()}
	var total int64
	failed := false
	f.topicRuns(func(i, j int, t *storage.Topic) {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = f.parts[i].Name, f.parts[i].ID
		for n := i; n < j; n++ {
			rp := &f.parts[n]
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
			case f.denied != nil && f.denied[n]:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case t == nil && req.Version >= 13:
				sp.ErrorCode = kerr.UnknownTopicID.Code
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case b.refuseFetch(req, c.node(), t, rp, &sp, &leaders):
			default:
				remaining := int64(maxBytes) - total
				limit := int32(min(remaining, int64(rp.MaxBytes), math.MaxInt32))
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
			*a = fetchsession.Answer{Records: records, Failed: sp.ErrorCode != 0, PreferredReplica: sp.PreferredReadReplica >= 0,
				HighWatermark: sp.HighWatermark, LogStartOffset: sp.LogStartOffset}
			// A partition left out carries no records, so the record
			// pieces indexed by position above stay with their entries.
			if f.fctx.Keep(n, a) {
				st.Partitions = append(st.Partitions, sp)
			}
		}
		if len(st.Partitions) > 0 {
			resp.Topics = append(resp.Topics, st)
		}
	})
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
func (b *Broker) refuseFetch(req *kmsg.FetchRequest, node int32, t *storage.Topic, rp *fetchsession.Requested, sp *kmsg.FetchResponseTopicPartition, leaders *leaderEndpoints) bool {
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
