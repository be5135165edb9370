package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/sharepartition"
)

// What ShareFetch and ShareAcknowledge check before shareserve sees them,
// and the translation of their acknowledgement batches (kmsg has a type
// per request) into sharepartition's.

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

func fetchAckBatches(in []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) []sharepartition.AckBatch {
	out := make([]sharepartition.AckBatch, len(in))
	for i, b := range in {
		out[i] = ackBatch(b.FirstOffset, b.LastOffset, b.AcknowledgeTypes)
	}
	return out
}

func ackRequestAckBatches(in []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) []sharepartition.AckBatch {
	out := make([]sharepartition.AckBatch, len(in))
	for i, b := range in {
		out[i] = ackBatch(b.FirstOffset, b.LastOffset, b.AcknowledgeTypes)
	}
	return out
}

// ackBatch converts one batch; the wire's acknowledge types are
// sharepartition's AckType values.
func ackBatch(first, last int64, types []int8) sharepartition.AckBatch {
	out := make([]sharepartition.AckType, len(types))
	for i, t := range types {
		out[i] = sharepartition.AckType(t)
	}
	return sharepartition.AckBatch{FirstOffset: first, LastOffset: last, Types: out}
}
