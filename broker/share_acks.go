package broker

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/storage"
)

// wireAckBatch is one acknowledgement batch as ShareFetch and
// ShareAcknowledge both carry it (kmsg has a type per request).
type wireAckBatch struct {
	first, last int64 // inclusive
	types       []int8
}

func fetchAckBatches(in []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) []wireAckBatch {
	out := make([]wireAckBatch, len(in))
	for i, b := range in {
		out[i] = wireAckBatch{first: b.FirstOffset, last: b.LastOffset, types: b.AcknowledgeTypes}
	}
	return out
}

func ackRequestAckBatches(in []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) []wireAckBatch {
	out := make([]wireAckBatch, len(in))
	for i, b := range in {
		out[i] = wireAckBatch{first: b.FirstOffset, last: b.LastOffset, types: b.AcknowledgeTypes}
	}
	return out
}

// validateAckBatches applies the request-level rules of share-groups.md
// §2.5 and §2.6 to one partition's batches, in Kafka's order. The first
// broken rule rejects every batch of the partition with INVALID_REQUEST;
// the share partition then checks offsets and ownership.
func validateAckBatches(version int16, isRenewAck bool, batches []wireAckBatch) error {
	// The wire's acknowledge types are sharepartition's AckType values.
	maxType := int8(sharepartition.AckReject)
	if version >= 2 {
		maxType = int8(sharepartition.AckRenew) // v2+, only with IsRenewAck
	}
	for i, b := range batches {
		switch {
		case b.first > b.last:
			return fmt.Errorf("%w: acknowledgement batch %d-%d is inverted", errInvalidRequest, b.first, b.last)
		case i > 0 && b.first < batches[i-1].last:
			// Kafka compares with <, so a batch may start on the previous
			// batch's last offset.
			return fmt.Errorf("%w: acknowledgement batch %d-%d overlaps the one before (ending %d)", errInvalidRequest, b.first, b.last, batches[i-1].last)
		case len(b.types) == 0:
			return fmt.Errorf("%w: acknowledgement batch %d-%d has no types", errInvalidRequest, b.first, b.last)
		case len(b.types) > 1 && int64(len(b.types)) != b.last-b.first+1:
			return fmt.Errorf("%w: acknowledgement batch %d-%d has %d types; want 1 or one per offset", errInvalidRequest, b.first, b.last, len(b.types))
		}
		for _, t := range b.types {
			switch {
			case t < 0 || t > maxType:
				return fmt.Errorf("%w: acknowledge type %d is not valid at v%d", errInvalidRequest, t, version)
			case t == int8(sharepartition.AckRenew) && !isRenewAck:
				return fmt.Errorf("%w: acknowledge type 4 (renew) needs IsRenewAck", errInvalidRequest)
			}
		}
	}
	return nil
}

// validateShareIDs checks the group and member IDs of a ShareFetch or
// ShareAcknowledge; a bad one is a top-level INVALID_REQUEST.
func validateShareIDs(groupID, memberID *string) error {
	if groupID == nil || *groupID == "" {
		return fmt.Errorf("%w: group ID is empty", errInvalidRequest)
	}
	return validateShareMemberID(memberID)
}

// validateShareMemberID checks a share member ID by the rule
// ShareGroupHeartbeat uses (group.CheckMemberID): Kafka applies one rule to
// all three requests. A null ID is refused here; Kafka fails on it
// internally.
func validateShareMemberID(id *string) error {
	if id == nil {
		return fmt.Errorf("%w: MemberId can't be null", errInvalidRequest)
	}
	return group.CheckMemberID(*id)
}

// validateRenewFetch applies §2.6: a ShareFetch with IsRenewAck only
// acknowledges, so every fetch limit must be zero. BatchSize and
// ShareAcquireMode are not checked, as in Kafka.
func validateRenewFetch(req *kmsg.ShareFetchRequest) error {
	if !req.IsRenewAck {
		return nil
	}
	if req.MaxBytes != 0 || req.MinBytes != 0 || req.MaxRecords != 0 || req.MaxWaitMillis != 0 {
		return fmt.Errorf("%w: a renew fetch (IsRenewAck) must set MaxBytes, MinBytes, MaxRecords and MaxWaitMs to 0; got %d, %d, %d, %d",
			errInvalidRequest, req.MaxBytes, req.MinBytes, req.MaxRecords, req.MaxWaitMillis)
	}
	return nil
}

// ackPartition applies one partition's acknowledgement batches for a
// member, checking in Kafka's order: the topic ID, the request-level rules,
// then the partition and its share state must exist, then the share partition checks offsets and ownership
// and applies all or nothing (share-groups.md §2.5). Acknowledgements never
// create share state: a partition this group never fetched here has none
// to acknowledge, which Kafka answers UNKNOWN_TOPIC_OR_PARTITION.
func (b *Broker) ackPartition(groupID, member string, version int16, isRenewAck bool, tp topicPartition, batches []wireAckBatch, now time.Time) error {
	if len(batches) == 0 {
		return nil // nothing to acknowledge is success
	}
	t := b.store.TopicByID(tp.topicID)
	if t == nil {
		return fmt.Errorf("%w: %x", storage.ErrUnknownTopicID, tp.topicID)
	}
	if err := validateAckBatches(version, isRenewAck, batches); err != nil {
		return err
	}
	if t.Partition(tp.partition) == nil {
		return fmt.Errorf("%w: %s has no partition %d", storage.ErrUnknownTopic, t.Name, tp.partition)
	}
	p := b.shareParts.lookup(sharePartitionKey{group: groupID, topicPartition: tp})
	if p == nil {
		return fmt.Errorf("%w: group %q has no share state for %s-%d on this broker", storage.ErrUnknownTopic, groupID, t.Name, tp.partition)
	}
	acks := make([]sharepartition.AckBatch, len(batches))
	for i, wb := range batches {
		types := make([]sharepartition.AckType, len(wb.types))
		for j, typ := range wb.types {
			types[j] = sharepartition.AckType(typ)
		}
		acks[i] = sharepartition.AckBatch{FirstOffset: wb.first, LastOffset: wb.last, Types: types}
	}
	return p.sp.Acknowledge(member, acks, now)
}
