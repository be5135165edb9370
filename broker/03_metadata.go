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
//   - An invalid name answers INVALID_TOPIC_EXCEPTION, an unknown one
//     UNKNOWN_TOPIC_OR_PARTITION, an unknown ID UNKNOWN_TOPIC_ID.
//   - v8+: IncludeTopicAuthorizedOperations answers every topic operation
//     for each named topic (an unknown ID excepted, as in Kafka's
//     KafkaApis); v8-v10: IncludeClusterAuthorizedOperations answers every
//     cluster operation. There are no ACLs. Otherwise both are INT32_MIN
//     (answers-as-kafka).

import (
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/storage"
)

// allTopicOperations is the bit set of every ACL operation on a topic:
// READ (3), WRITE (4), CREATE (5), DELETE (6), ALTER (7), DESCRIBE (8),
// DESCRIBE_CONFIGS (10) and ALTER_CONFIGS (11), as Kafka reports for a
// principal allowed everything.
const allTopicOperations int32 = 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11

func init() { register(3, 0, 13, handleMetadata) }

func handleMetadata(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.MetadataRequest)
	resp := kmsg.NewPtrMetadataResponse()
	l := r.conn.l
	rs := b.replicaSets()
	rs.aliveOnly = req.Version == 0
	for _, node := range rs.live {
		broker := kmsg.NewMetadataResponseBroker()
		e := b.nodeEndpoint(node, l.index)
		broker.NodeID, broker.Host, broker.Port = node, e.host, e.port
		resp.Brokers = append(resp.Brokers, broker)
	}
	resp.ClusterID = &b.cfg.ClusterID
	resp.ControllerID = rs.live[0]
	if req.Version >= 8 && req.Version <= 10 && req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = clusterOperations
	}
	if req.Version >= 8 && req.IncludeTopicAuthorizedOperations {
		defer func() {
			for i := range resp.Topics {
				if resp.Topics[i].ErrorCode != kerr.UnknownTopicID.Code {
					resp.Topics[i].AuthorizedOperations = allTopicOperations
				}
			}
		}()
	}

	allTopics := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if allTopics {
		for _, t := range b.store.Topics() {
			resp.Topics = append(resp.Topics, b.metadataTopic(t, rs))
		}
		return resp, nil
	}
	autoCreate := b.cfg.props.bool("auto.create.topics.enable") && (req.Version < 4 || req.AllowAutoTopicCreation)
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
		case rt.Topic != nil:
			name := *rt.Topic
			t = b.store.Topic(name)
			if t == nil && autoCreate {
				var err error
				t, err = b.autoCreateTopic(name)
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
		resp.Topics = append(resp.Topics, b.metadataTopic(t, rs))
	}
	return resp, nil
}

// autoCreateTopic creates a topic with the broker's defaults. Two clients
// racing to create the same topic both get it.
func (b *Broker) autoCreateTopic(name string) (*storage.Topic, error) {
	t, err := b.store.CreateTopic(name, b.cfg.props.int32("num.partitions"), nil)
	if errors.Is(err, storage.ErrTopicExists) {
		if t = b.store.Topic(name); t != nil {
			return t, nil
		}
	}
	if err == nil {
		b.log.Info("topic auto-created", attrTopic, name, "partitions", b.cfg.props.int32("num.partitions"))
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

func (b *Broker) metadataTopic(t *storage.Topic, rs replicaSets) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	for _, p := range t.Partitions() {
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
