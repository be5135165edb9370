package shareserve

import (
	"errors"
	"fmt"
	"time"

	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/storage"
)

// ErrInvalidRequest is a request-level rule broken (INVALID_REQUEST).
var ErrInvalidRequest = errors.New("invalid request")

// ValidateAckBatches applies the request-level rules of share-groups.md
// §2.5 and §2.6 to one partition's batches, in Kafka's order. version is
// the request's: RENEW exists from v2, and only with isRenewAck. The first
// broken rule rejects every batch of the partition with INVALID_REQUEST;
// the share partition then checks offsets and ownership.
func ValidateAckBatches(version int16, isRenewAck bool, batches []sharepartition.AckBatch) error {
	maxType := sharepartition.AckReject
	if version >= 2 {
		maxType = sharepartition.AckRenew // v2+, only with IsRenewAck
	}
	for i, b := range batches {
		switch {
		case b.FirstOffset > b.LastOffset:
			return fmt.Errorf("%w: acknowledgement batch %d-%d is inverted", ErrInvalidRequest, b.FirstOffset, b.LastOffset)
		case i > 0 && b.FirstOffset < batches[i-1].LastOffset:
			// Kafka compares with <, so a batch may start on the previous
			// batch's last offset.
			return fmt.Errorf("%w: acknowledgement batch %d-%d overlaps the one before (ending %d)", ErrInvalidRequest, b.FirstOffset, b.LastOffset, batches[i-1].LastOffset)
		case len(b.Types) == 0:
			return fmt.Errorf("%w: acknowledgement batch %d-%d has no types", ErrInvalidRequest, b.FirstOffset, b.LastOffset)
		case len(b.Types) > 1 && int64(len(b.Types)) != b.LastOffset-b.FirstOffset+1:
			return fmt.Errorf("%w: acknowledgement batch %d-%d has %d types; want 1 or one per offset", ErrInvalidRequest, b.FirstOffset, b.LastOffset, len(b.Types))
		}
		for _, t := range b.Types {
			switch {
			case t < 0 || t > maxType:
				return fmt.Errorf("%w: acknowledge type %d is not valid at v%d", ErrInvalidRequest, t, version)
			case t == sharepartition.AckRenew && !isRenewAck:
				return fmt.Errorf("%w: acknowledge type 4 (renew) needs IsRenewAck", ErrInvalidRequest)
			}
		}
	}
	return nil
}

// acknowledgePartition applies one partition's acknowledgement batches for a
// member, checking in Kafka's order: the topic ID, the request-level rules
// (ValidateAckBatches), then the partition and its share state must exist,
// then the share partition checks offsets and ownership and applies all or
// nothing (share-groups.md §2.5). A node that does not lead the partition
// holds no share state for it, as a Kafka broker caches share partitions
// only where it leads (docs/cluster.md share-ack-after-move). Acknowledgements never create share
// state: a partition this group never fetched here has none to
// acknowledge, which Kafka answers UNKNOWN_TOPIC_OR_PARTITION.
func (s *Service) acknowledgePartition(key SessionKey, tp TopicPartition, version int16, isRenewAck bool, batches []sharepartition.AckBatch, now time.Time) error {
	if len(batches) == 0 {
		return nil // nothing to acknowledge is success
	}
	t := s.store.TopicByID(tp.TopicID)
	if t == nil {
		return unknownTopicID(tp.TopicID)
	}
	if err := ValidateAckBatches(version, isRenewAck, batches); err != nil {
		return err
	}
	if t.Partition(tp.Partition) == nil {
		return unknownPartition(t, tp.Partition)
	}
	if s.edge != nil && s.edge.Leads(key.Node, tp) != nil {
		// The node holds share partitions only for what it leads; after a
		// leader move the old leader has dropped it (share-ack-after-move).
		return fmt.Errorf("%w: node %d does not lead %s-%d, so holds no share state for it", storage.ErrUnknownTopic, key.Node, t.Name, tp.Partition)
	}
	p := s.Lookup(Key{Group: key.Group, TopicPartition: tp})
	if p == nil {
		return fmt.Errorf("%w: group %q has no share state for %s-%d on this broker", storage.ErrUnknownTopic, key.Group, t.Name, tp.Partition)
	}
	return p.Share.Acknowledge(key.Member, batches, now)
}
