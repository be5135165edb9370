package broker

// CreatePartitions (key 37), v0-v3.
//
//   - Count is the new total. It must exceed the current count, else
//     INVALID_PARTITIONS with both numbers in the message.
//   - An unknown topic answers UNKNOWN_TOPIC_OR_PARTITION, a name given
//     twice INVALID_REQUEST (once).
//   - Assignment, if given, must hold one replica list per new partition,
//     each a permutation of all node IDs (with one node, exactly [our node
//     ID]); else INVALID_REPLICA_ASSIGNMENT. The list is the partition's
//     replica list, its first live node the leader (explicit-assignment).
//   - ValidateOnly checks everything and adds nothing.
//   - The partitions the unique topics the principal may alter would gain
//     are summed first; over 10,000 every topic answers POLICY_VIOLATION
//     "Excessively large number of partitions per request.", validateOnly
//     or not (partitions-per-request-limit; Kafka 4.2's controller bounds
//     one operation at 10,000 records, KAFKA-19673 proposes this answer).
//   - New partitions start empty at offset 0.
//   - Authorization (docs/security.md api-authorization): ALTER on each
//     topic, else TOPIC_AUTHORIZATION_FAILED without a message.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/storage"
)

func init() { register(37, 0, 3, handleCreatePartitions) }

func handleCreatePartitions(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	counts := make(map[string]int, len(req.Topics))
	for _, rt := range req.Topics {
		counts[rt.Topic]++
	}
	answered := make(map[string]bool, len(req.Topics))
	// The partitions the unique, permitted topics would add are counted
	// first: past the limit every topic answers POLICY_VIOLATION and none
	// grows (partitions-per-request-limit).
	denials := make([]bool, len(req.Topics))
	var added storage.NewPartitions
	var tooMany error
	for i, rt := range req.Topics {
		denials[i] = counts[rt.Topic] == 1 && !r.authorized(acl.OpAlter, acl.ResourceTopic, rt.Topic)
		if t := b.store.Topic(rt.Topic); t != nil && counts[rt.Topic] == 1 && !denials[i] && tooMany == nil {
			tooMany = added.Add(int64(rt.Count) - int64(len(t.Partitions())))
		}
	}
	for i, rt := range req.Topics {
		if answered[rt.Topic] {
			continue
		}
		answered[rt.Topic] = true
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var err error
		if tooMany != nil {
			err = tooMany
		} else if counts[rt.Topic] > 1 {
			err = fmt.Errorf("%w: topic %q appears %d times in the request", errInvalidRequest, rt.Topic, counts[rt.Topic])
		} else if denials[i] {
			// ALTER on the topic; the refusal has no message, as
			// ControllerApis.createPartitions answers it.
			err = codeOnly{errTopicAuthorization}
		} else {
			err = b.createPartitions(&rt, req.ValidateOnly)
		}
		if err != nil {
			st.ErrorCode, st.ErrorMessage = codeFor(err), errMessage(err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (b *Broker) createPartitions(rt *kmsg.CreatePartitionsRequestTopic, validateOnly bool) error {
	t := b.store.Topic(rt.Topic)
	if t == nil {
		return fmt.Errorf("%w: %q", storage.ErrUnknownTopic, rt.Topic)
	}
	current := int32(len(t.Partitions()))
	switch {
	case rt.Count < current:
		return fmt.Errorf("%w: topic %q has %d partitions; %d would not be an increase", storage.ErrInvalidPartitions, rt.Topic, current, rt.Count)
	case rt.Count == current:
		return fmt.Errorf("%w: topic %q already has %d partitions", storage.ErrInvalidPartitions, rt.Topic, current)
	}
	if rt.Assignment != nil {
		if added := rt.Count - current; int32(len(rt.Assignment)) != added {
			return fmt.Errorf("%w: %d partitions would be added but %d assignments were given", errInvalidReplicaAssignment, added, len(rt.Assignment))
		}
		for i, a := range rt.Assignment {
			if err := b.checkReplicas(current+int32(i), a.Replicas); err != nil {
				return err
			}
		}
	}
	if validateOnly {
		return nil
	}
	if err := t.AddPartitions(rt.Count); err != nil {
		return err // a concurrent CreatePartitions got there first
	}
	if rt.Assignment != nil {
		assigned := make([][]int32, len(rt.Assignment))
		for i, a := range rt.Assignment {
			assigned[i] = a.Replicas
		}
		b.cluster.Assign(rt.Topic, current, assigned)
	}
	b.log.Info("partitions added", attrTopic, rt.Topic, "partitions", rt.Count)
	return nil
}
