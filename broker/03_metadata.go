package broker

// Metadata (key 3), v0-v13.
//
//   - Brokers: every live node, each at the advertised address of its
//     listener of the same name as the one the client connected to
//     (docs/cluster.md metadata-truth). The controller is the first
//     live node. One node (the default) is the controller and leads every
//     partition.
//   - Partitions: the leader and leader epoch the cluster placed; every
//     node is a replica, the live ones in sync, the stopped ones offline.
//     v0 lists only live replicas and answers a partition with a stopped
//     one REPLICA_NOT_AVAILABLE, leader given (metadata-v0-filter).
//   - Topics: all of them for a null list (v1+) or an empty list (v0);
//     otherwise the named ones, by name or (v10+) by topic ID.
//   - An unknown topic is created when auto.create.topics.enable is set and
//     the request allows it (always before v4), with num.partitions
//     partitions; it is answered complete at once, not LEADER_NOT_AVAILABLE.
//     The topics one request creates share the 10,000 partitions a request
//     may create: past them the rest answer POLICY_VIOLATION, uncreated,
//     with a WARN line (partitions-per-request-limit).
//   - An invalid name answers INVALID_TOPIC_EXCEPTION, an unknown one
//     UNKNOWN_TOPIC_OR_PARTITION, an unknown ID UNKNOWN_TOPIC_ID.
//   - v8+: IncludeTopicAuthorizedOperations answers the operations the
//     principal may perform (authorized-operations) for each topic it may
//     describe (an unknown ID excepted, as in Kafka's KafkaApis); v8-v10:
//     IncludeClusterAuthorizedOperations answers the cluster's, or 0
//     without DESCRIBE on CLUSTER. Otherwise both are INT32_MIN
//     (answers-as-kafka).
//   - Authorization (docs/security.md, metadata-hides): all topics lists
//     only those the principal may DESCRIBE; a named topic it may not
//     describe answers TOPIC_AUTHORIZATION_FAILED (with its topic ID when
//     asked by ID, else with neither ID nor a hint whether it exists); an
//     unknown topic it may not create (CREATE on CLUSTER or on the topic)
//     answers TOPIC_AUTHORIZATION_FAILED instead of being auto-created.
//     Refused topics come last, refused creations first.

import (
	"errors"
	"slices"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/storage"
)

func init() { register(3, 0, 13, handleMetadata) }

func handleMetadata(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.MetadataRequest)
	resp := kmsg.NewPtrMetadataResponse()
	l := r.conn.l
	rs := b.replicaSets()
	rs.aliveOnly = req.Version == 0
	var lists partitionLists
	for _, node := range rs.live {
		broker := kmsg.NewMetadataResponseBroker()
		e := b.nodeEndpoint(node, l.index)
		broker.NodeID, broker.Host, broker.Port = node, e.host, e.port
		resp.Brokers = append(resp.Brokers, broker)
	}
	resp.ClusterID = &b.cfg.ClusterID
	resp.ControllerID = rs.live[0]
	if req.Version >= 8 && req.Version <= 10 && req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = 0
		if r.authorizedCluster(acl.OpDescribe) {
			resp.AuthorizedOperations = r.authorizedOperations(acl.ResourceCluster, acl.ClusterName)
		}
	}
	if req.Version >= 8 && req.IncludeTopicAuthorizedOperations {
		// Only topics the principal may describe get the field, as in
		// Kafka: an unknown ID and a refused topic keep INT32_MIN.
		defer func() {
			for i := range resp.Topics {
				if c := resp.Topics[i].ErrorCode; c != kerr.UnknownTopicID.Code && c != kerr.TopicAuthorizationFailed.Code {
					var name string // none for an entry naming neither topic nor ID
					if resp.Topics[i].Topic != nil {
						name = *resp.Topics[i].Topic
					}
					resp.Topics[i].AuthorizedOperations = r.authorizedOperations(acl.ResourceTopic, name)
				}
			}
		}()
	}

	allTopics := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if allTopics {
		// Topics the principal may not describe are left out, without a
		// word (rule metadata-hides).
		topics := b.store.Topics()
		resp.Topics = make([]kmsg.MetadataResponseTopic, 0, len(topics))
		for _, t := range topics {
			if r.authorizedQuietly(acl.OpDescribe, acl.ResourceTopic, t.Name) {
				resp.Topics = append(resp.Topics, b.metadataTopic(t, rs, &lists))
			}
		}
		return resp, nil
	}
	autoCreate := b.cfg.props.Bool("auto.create.topics.enable") && (req.Version < 4 || req.AllowAutoTopicCreation)
	// Refused topics follow the others, those refused CREATE first, as
	// KafkaApis.handleTopicMetadataRequest lists them.
	var refusedCreate, refusedDescribe []kmsg.MetadataResponseTopic
	refuse := func(list *[]kmsg.MetadataResponseTopic, name *string, id [16]byte) {
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic, mt.TopicID, mt.ErrorCode = name, id, kerr.TopicAuthorizationFailed.Code
		*list = append(*list, mt)
	}
	// The topics one request auto-creates share one partitions budget
	// (partitions-per-request-limit).
	var created storage.NewPartitions
	for _, rt := range req.Topics {
		var t *storage.Topic
		switch {
		case rt.Topic == nil && rt.TopicID != [16]byte{}:
			if t = b.store.TopicByID(rt.TopicID); t == nil {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			// A topic ID is not secret: the refusal names it.
			if !r.authorized(acl.OpDescribe, acl.ResourceTopic, t.Name) {
				refuse(&refusedDescribe, nil, t.ID)
				continue
			}
		case rt.Topic != nil:
			name := *rt.Topic
			// Refused before looking the topic up: whether it exists is
			// not disclosed.
			if !r.authorized(acl.OpDescribe, acl.ResourceTopic, name) {
				refuse(&refusedDescribe, rt.Topic, [16]byte{})
				continue
			}
			t = b.store.Topic(name)
			if t == nil && autoCreate && !r.mayAutoCreate(name) {
				refuse(&refusedCreate, rt.Topic, [16]byte{})
				continue
			}
			if t == nil && autoCreate {
				var err error
				t, err = b.autoCreateTopic(name, &created)
				if err != nil {
					mt := kmsg.NewMetadataResponseTopic()
					mt.Topic = rt.Topic
					mt.ErrorCode = codeFor(err)
					resp.Topics = append(resp.Topics, mt)
					continue
				}
			}
			if t == nil {
				mt := kmsg.NewMetadataResponseTopic()
				mt.Topic = rt.Topic
				mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
				if storage.ValidateTopicName(name) != nil {
					mt.ErrorCode = kerr.InvalidTopicException.Code
				}
				resp.Topics = append(resp.Topics, mt)
				continue
			}
		default:
			mt := kmsg.NewMetadataResponseTopic()
			mt.ErrorCode = kerr.InvalidRequest.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, b.metadataTopic(t, rs, &lists))
	}
	if created.Add(0) != nil { // once per request, however many it refused
		b.log.Warn("topics not auto-created: the request's topics would pass the partitions one request may create",
			"num.partitions", b.cfg.props.Int32("num.partitions"), "limit", storage.MaxPartitionsPerRequest)
	}
	resp.Topics = append(resp.Topics, refusedCreate...)
	resp.Topics = append(resp.Topics, refusedDescribe...)
	return resp, nil
}

// mayAutoCreate is whether the principal may have Metadata create topic
// name: CREATE on CLUSTER (asked quietly, as Kafka does) or on the topic.
func (r *request) mayAutoCreate(name string) bool {
	return r.authorizedQuietly(acl.OpCreate, acl.ResourceCluster, acl.ClusterName) ||
		r.authorized(acl.OpCreate, acl.ResourceTopic, name)
}

// autoCreateTopic creates a topic with the broker's defaults, counting its
// partitions in the request's budget. Two clients racing to create the
// same topic both get it.
func (b *Broker) autoCreateTopic(name string, budget *storage.NewPartitions) (*storage.Topic, error) {
	if err := budget.Add(int64(b.cfg.props.Int32("num.partitions"))); err != nil {
		return nil, err
	}
	t, err := b.store.CreateTopic(name, b.cfg.props.Int32("num.partitions"), nil)
	if errors.Is(err, storage.ErrTopicExists) {
		if t = b.store.Topic(name); t != nil {
			return t, nil
		}
	}
	if err == nil {
		b.log.Info("topic auto-created", attrTopic, name, "partitions", b.cfg.props.Int32("num.partitions"))
	}
	return t, err
}

// replicaSets are the replicas every partition has: all nodes, the live
// ones in sync and the stopped ones offline. Partitions of one response
// share the slices.
type replicaSets struct {
	all, live, offline []int32
	// aliveOnly is set for Metadata v0, which lists only the replicas on
	// live nodes (docs/cluster.md metadata-v0-filter).
	aliveOnly bool
}

func (b *Broker) replicaSets() replicaSets {
	var rs replicaSets
	for _, n := range b.cluster.Nodes() {
		rs.all = append(rs.all, n.ID)
		if n.Up {
			rs.live = append(rs.live, n.ID)
		} else {
			rs.offline = append(rs.offline, n.ID)
		}
	}
	return rs
}

// inReplicaOrder returns a partition's replicas, in-sync replicas and
// offline replicas in the order of its replica list (docs/cluster.md
// replica-order, metadata-partition).
func (rs replicaSets) inReplicaOrder(replicas []int32) (all, isr, offline []int32) {
	for _, id := range replicas {
		if slices.Contains(rs.offline, id) {
			offline = append(offline, id)
		} else {
			isr = append(isr, id)
		}
	}
	return replicas, isr, offline
}

func (b *Broker) metadataTopic(t *storage.Topic, rs replicaSets, lists *partitionLists) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = &t.Name // never changed, and the answer only reads it
	mt.TopicID = t.ID
	partitions := t.Partitions()
	mt.Partitions = lists.take(len(partitions))
	for _, p := range partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.Index
		lead := b.leadership(t, p.Index)
		mp.Leader, mp.LeaderEpoch = lead.Leader, lead.Epoch
		mp.Replicas, mp.ISR, mp.OfflineReplicas = rs.all, rs.live, rs.offline
		if len(rs.all) > 1 {
			mp.Replicas, mp.ISR, mp.OfflineReplicas = rs.inReplicaOrder(b.cluster.Replicas(t.Name, p.Index))
		}
		if rs.aliveOnly && len(mp.OfflineReplicas) > 0 {
			// Kafka's KRaftMetadataCache.maybeFilterAliveReplicas for
			// errorUnavailableEndpoints: the live replicas, in replica
			// order, are the ISR; the leader is still given.
			mp.Replicas = mp.ISR
			mp.ErrorCode = kerr.ReplicaNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// partitionListsBlock is how many partition entries partitionLists
// allocates at a time: as many as fill 32 KiB with the 8-byte header the
// allocator adds to a block of that size holding pointers (one entry more
// and the block would take the next size class).
const partitionListsBlock = (32<<10 - 8) / int(unsafe.Sizeof(kmsg.MetadataResponseTopicPartition{}))

// partitionLists hands out the partition lists of one Metadata answer
// from blocks of partitionListsBlock entries: for all of 20,000
// one-partition topics that is some 80 allocations rather than one per
// topic (issue 22). Each list is empty with room for exactly the
// partitions it was taken for, so appending to it stays in its part of
// the block.
type partitionLists struct {
	free []kmsg.MetadataResponseTopicPartition
}

// take returns an empty list with room for n entries.
func (l *partitionLists) take(n int) []kmsg.MetadataResponseTopicPartition {
	if n > len(l.free) {
		if n > partitionListsBlock/4 {
			// A large topic gets its own; the block's rest stays for
			// the next.
			return make([]kmsg.MetadataResponseTopicPartition, 0, n)
		}
		l.free = make([]kmsg.MetadataResponseTopicPartition, partitionListsBlock)
	}
	list := l.free[:0:n]
	l.free = l.free[n:]
	return list
}
