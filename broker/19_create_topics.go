package broker

// CreateTopics (key 19), v2-v7.
//
//   - NumPartitions -1 means num.partitions; 0 or below -1 answers
//     INVALID_PARTITIONS.
//   - ReplicationFactor must be -1 or 1 to the number of nodes, as Kafka
//     allows 1 to the number of brokers; anything else answers
//     INVALID_REPLICATION_FACTOR. Every node holds a replica of every
//     partition whatever the factor, so the answer says N
//     (replication-factor).
//   - Explicit Assignments need NumPartitions and ReplicationFactor of -1
//     (else INVALID_REQUEST), partitions numbered 0..n-1, and every replica
//     list a permutation of all node IDs (with one node, exactly [our node
//     ID]); anything else is INVALID_REPLICA_ASSIGNMENT. The list is the
//     partition's replica list, its first live node the leader
//     (explicit-assignment).
//   - A bad name answers INVALID_TOPIC_EXCEPTION, an existing topic
//     TOPIC_ALREADY_EXISTS, an unknown or invalid config INVALID_CONFIG
//     naming the property, a name given twice INVALID_REQUEST (once).
//   - ValidateOnly checks everything and creates nothing.
//   - Partitions the unique topics the principal may create ask for
//     (assignments, else NumPartitions, else num.partitions for -1) are
//     summed first; over 10,000 every topic answers POLICY_VIOLATION
//     "Excessively large number of partitions per request.", validateOnly
//     or not, and nothing is created (partitions-per-request-limit).
//   - v5+: a created (or validated) topic reports its partition count,
//     replication factor and every topic config with its source; v7 adds
//     the topic ID (zero under ValidateOnly: nothing was created).
//   - Every error carries an ErrorMessage (v1+); success a null one.
//   - v5+: a topic that failed answers an empty Configs list, never a null
//     one, and -1 partitions and replication factor, as Kafka's controller
//     does (answers-as-kafka).
//   - Authorization (docs/security.md api-authorization): CREATE on CLUSTER
//     or on each topic (else TOPIC_AUTHORIZATION_FAILED "Authorization
//     failed.", after the others); configs only with DESCRIBE_CONFIGS on the
//     topic, else TopicConfigErrorCode TOPIC_AUTHORIZATION_FAILED.

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/internal/refusal"
	"github.com/sharebroker/sharebroker/storage"
)

func init() { register(19, 2, 7, handleCreateTopics) }

func handleCreateTopics(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	resp.Topics = make([]kmsg.CreateTopicsResponseTopic, 0, len(req.Topics))
	counts := make(map[string]int, len(req.Topics))
	for _, rt := range req.Topics {
		counts[rt.Topic]++
	}
	// CREATE on CLUSTER (asked quietly) covers every topic; else each
	// needs CREATE, and refused ones follow the others with Kafka's
	// "Authorization failed." (ControllerApis.createTopics).
	cluster := r.authorizedQuietly(acl.OpCreate, acl.ResourceCluster, acl.ClusterName)
	denials := make([]bool, len(req.Topics))
	// The partitions the unique, permitted topics ask for are counted
	// before any is looked at: past the limit the whole request is
	// refused, every topic POLICY_VIOLATION, validateOnly or not
	// (partitions-per-request-limit; ControllerApis answers the
	// controller's exception with getErrorResponse).
	var asked storage.NewPartitions
	var tooMany error
	defaultPartitions := b.cfg.props.Int32("num.partitions")
	for i := range req.Topics {
		rt := &req.Topics[i]
		denials[i] = counts[rt.Topic] == 1 && !cluster && !r.authorized(acl.OpCreate, acl.ResourceTopic, rt.Topic)
		if counts[rt.Topic] == 1 && !denials[i] && tooMany == nil {
			tooMany = asked.Add(storage.RequestedPartitions(rt.NumPartitions, len(rt.ReplicaAssignment), defaultPartitions))
		}
	}
	var refused []kmsg.CreateTopicsResponseTopic
	for i := range req.Topics {
		rt := &req.Topics[i]
		// A name is answered once, at its first entry: its count is
		// zeroed then.
		count := counts[rt.Topic]
		if count == 0 {
			continue
		}
		counts[rt.Topic] = 0
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		var err error
		denied := false
		if tooMany != nil {
			err = tooMany
		} else if count > 1 {
			err = fmt.Errorf("%w: topic %q appears %d times in the request", errInvalidRequest, rt.Topic, count)
		} else if denied = denials[i]; denied {
			err = refusal.New(errTopicAuthorization, "Authorization failed.")
		} else {
			err = b.createTopic(rt, req.ValidateOnly, &st)
			// Its configs only to whom may DESCRIBE_CONFIGS it (asked
			// quietly); the others get TopicConfigErrorCode.
			if err == nil && !r.authorizedQuietly(acl.OpDescribeConfigs, acl.ResourceTopic, rt.Topic) {
				st.Configs = nil
				st.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
			}
		}
		if err != nil {
			st.ErrorCode, st.ErrorMessage = codeFor(err), errMessage(err)
			st.NumPartitions, st.ReplicationFactor = -1, -1
			st.Configs, st.TopicID = []kmsg.CreateTopicsResponseTopicConfig{}, [16]byte{}
		}
		if denied {
			refused = append(refused, st)
			continue
		}
		resp.Topics = append(resp.Topics, st)
	}
	resp.Topics = append(resp.Topics, refused...)
	return resp, nil
}

// createTopic validates one topic and, unless validateOnly, creates it,
// filling st's v5+ fields.
func (b *Broker) createTopic(rt *kmsg.CreateTopicsRequestTopic, validateOnly bool, st *kmsg.CreateTopicsResponseTopic) error {
	if err := storage.ValidateTopicName(rt.Topic); err != nil {
		return err
	}
	if b.store.Topic(rt.Topic) != nil {
		return fmt.Errorf("%w: topic %q already exists", storage.ErrTopicExists, rt.Topic)
	}
	partitions, assigned, err := b.newTopicPartitions(rt)
	if err != nil {
		return err
	}
	// None given is the common case (a batch of plain topics): no map,
	// as for an auto-created topic.
	var configs map[string]string
	if len(rt.Configs) > 0 {
		configs = make(map[string]string, len(rt.Configs))
	}
	for _, c := range rt.Configs {
		if c.Value == nil {
			return fmt.Errorf("%w: null value for topic config %s", errInvalidConfig, c.Name)
		}
		configs[c.Name] = *c.Value
	}
	if err := validateTopicConfigs(configs); err != nil {
		return err
	}

	if !validateOnly {
		t, err := b.store.CreateTopic(rt.Topic, partitions, configs)
		if err != nil {
			return err // a concurrent create of the same name
		}
		st.TopicID = t.ID
		if assigned != nil {
			b.cluster.Assign(t.Name, 0, assigned)
		}
		b.log.Info("topic created", attrTopic, t.Name, "partitions", partitions)
	}
	st.NumPartitions, st.ReplicationFactor = partitions, int16(b.cfg.Nodes)
	if len(configs) == 0 {
		// The same for every such topic, and only read: shared.
		st.Configs = b.cfg.topicDefaults.get(b).created
	} else {
		st.Configs = createdConfigs(b.topicConfigEntries(configs))
	}
	return nil
}

// createdConfigs is CreateTopics' (v5+) answer of a topic's configs,
// which points into entries: they are read-only (topicConfigEntries).
func createdConfigs(entries []configEntry) []kmsg.CreateTopicsResponseTopicConfig {
	out := make([]kmsg.CreateTopicsResponseTopicConfig, len(entries))
	for i := range entries {
		e, c := &entries[i], &out[i]
		c.Default()
		c.Name, c.Value, c.ReadOnly, c.Source = e.prop.Name, &e.value, e.readOnly, int8(e.source)
	}
	return out
}

// newTopicPartitions checks the partition count, replication factor and
// assignments of a new topic and returns its partition count and, for an
// explicit assignment, each partition's replica list by index.
func (b *Broker) newTopicPartitions(rt *kmsg.CreateTopicsRequestTopic) (int32, [][]int32, error) {
	if len(rt.ReplicaAssignment) > 0 {
		if rt.NumPartitions != -1 || rt.ReplicationFactor != -1 {
			return 0, nil, fmt.Errorf("%w: a manual partition assignment was given, so NumPartitions and ReplicationFactor must be -1", errInvalidRequest)
		}
		n := int32(len(rt.ReplicaAssignment))
		assigned := make([][]int32, n)
		for _, a := range rt.ReplicaAssignment {
			if err := b.checkReplicas(a.Partition, a.Replicas); err != nil {
				return 0, nil, err
			}
		}
		for _, a := range rt.ReplicaAssignment {
			if a.Partition < 0 || a.Partition >= n || assigned[a.Partition] != nil {
				return 0, nil, fmt.Errorf("%w: assigned partitions must be numbered 0 to %d, each once", errInvalidReplicaAssignment, n-1)
			}
			assigned[a.Partition] = a.Replicas
		}
		return n, assigned, nil
	}
	partitions := rt.NumPartitions
	switch {
	case partitions == -1:
		partitions = b.cfg.props.Int32("num.partitions")
	case partitions <= 0:
		return 0, nil, fmt.Errorf("%w: %d; give a positive count or -1 for num.partitions", storage.ErrInvalidPartitions, partitions)
	}
	switch rf := rt.ReplicationFactor; {
	case rf == 0 || rf < -1:
		return 0, nil, fmt.Errorf("%w: %d; give a positive factor or -1 for the default", errInvalidReplicationFactor, rf)
	case int(rf) > b.cfg.Nodes:
		return 0, nil, fmt.Errorf("%w: %d replicas cannot be placed: the cluster has %d %s", errInvalidReplicationFactor, rf, b.cfg.Nodes, plural(b.cfg.Nodes, "broker", "brokers"))
	}
	return partitions, nil, nil
}

// checkReplicas accepts a partition's replica list if it names every node
// of the cluster once (docs/cluster.md explicit-assignment); with one node
// the list must be exactly that node.
func (b *Broker) checkReplicas(partition int32, replicas []int32) error {
	ok := len(replicas) == b.cfg.Nodes
	for i, r := range replicas {
		if r < b.cfg.NodeID || int64(r) >= int64(b.cfg.NodeID)+int64(b.cfg.Nodes) || slices.Contains(replicas[:i], r) {
			ok = false
		}
	}
	if !ok {
		if b.cfg.Nodes == 1 {
			return fmt.Errorf("%w: partition %d is assigned to brokers %v; the only broker is %d", errInvalidReplicaAssignment, partition, replicas, b.cfg.NodeID)
		}
		return fmt.Errorf("%w: partition %d is assigned to brokers %v; every partition needs each of the brokers %d to %d exactly once", errInvalidReplicaAssignment, partition, replicas, b.cfg.NodeID, b.cfg.NodeID+int32(b.cfg.Nodes)-1)
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
