package shareserve

import (
	"fmt"
	"time"

	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/storage"
)

// ErrInvalidRequest is an acknowledgement that breaks a request-level
// rule (INVALID_REQUEST): sharepartition.ValidateAcks checks them, in one
// place for the share partition and for serving.
var ErrInvalidRequest = sharepartition.ErrAckBatches

// acknowledgePartition applies one partition's acknowledgement batches for a
// member, checking in Kafka's order: the topic ID, the request-level rules
// (sharepartition.ValidateAcks), then the partition and its share state must exist,
// then the share partition checks offsets and ownership and applies all or
// nothing (share-groups.md §2.5). A node that does not lead the partition
// holds no share state for it, as a Kafka broker caches share partitions
// only where it leads (docs/cluster.md share-ack-after-move). Acknowledgements never create share
// state: a partition this group never fetched here has none to
// acknowledge, which Kafka answers UNKNOWN_TOPIC_OR_PARTITION.
func (s *Service) acknowledgePartition(key SessionKey, tp TopicPartition, version int16, isRenewAck bool, batches []sharepartition.AckBatch, now time.Time) error {
	return s.acknowledgeIn(nil, key, tp, version, isRenewAck, batches, now)
}

// acknowledgeIn is acknowledgePartition for the session whose ready set is
// ready (nil: none at hand). The share partition the session subscribed to
// for tp is the registry's while it is not dropped and is of tp's log, so
// it is used without a registry lookup (the registry's lock and a map of
// every group's share partitions), as a fetch's look uses it (resolve):
// at thousands of partitions each fetch acknowledges dozens (issue 22).
func (s *Service) acknowledgeIn(ready *readySet, key SessionKey, tp TopicPartition, version int16, isRenewAck bool, batches []sharepartition.AckBatch, now time.Time) error {
	if len(batches) == 0 {
		return nil // nothing to acknowledge is success
	}
	t := s.store.TopicByID(tp.TopicID)
	if t == nil {
		return unknownTopicID(tp.TopicID)
	}
	if err := sharepartition.ValidateAcks(version, isRenewAck, batches); err != nil {
		return err
	}
	log := t.Partition(tp.Partition)
	if log == nil {
		return unknownPartition(t, tp.Partition)
	}
	if s.edge != nil && s.edge.Leads(key.Node, tp) != nil {
		// The node holds share partitions only for what it leads; after a
		// leader move the old leader has dropped it (share-ack-after-move).
		return fmt.Errorf("%w: node %d does not lead %s-%d, so holds no share state for it", storage.ErrUnknownTopic, key.Node, t.Name, tp.Partition)
	}
	p := ready.registeredPart(tp, log)
	if p == nil {
		p = s.Lookup(Key{Group: key.Group, TopicPartition: tp})
	}
	if p == nil {
		return fmt.Errorf("%w: group %q has no share state for %s-%d on this broker", storage.ErrUnknownTopic, key.Group, t.Name, tp.Partition)
	}
	return p.Share.Acknowledge(key.Member, batches, now)
}
