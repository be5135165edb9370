package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/cluster"
	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/shareserve"
	"github.com/sharebroker/sharebroker/storage"
)

// What ShareFetch and ShareAcknowledge check before shareserve sees them,
// the translation of their acknowledgement batches (kmsg has a type per
// request) into sharepartition's, and what the broker answers when
// shareserve asks the edge (shareEdge).

// errShareTopicAuthorization refuses a share partition of a topic the
// principal may not READ: the code without a message, as Kafka's
// ShareFetchResponse.partitionResponse and ShareAcknowledgeResponse's.
var errShareTopicAuthorization = codeOnly{errTopicAuthorization}

// shareEdge is what the broker knows that share serving asks
// (shareserve.Edge): which node leads a partition, and what a request's
// principal may read.
type shareEdge struct{ b *Broker }

// Leads returns a shareNotLeader when another node leads tp. A topic or
// partition that does not exist passes: shareserve answers it. A single
// node leads everything, so it checks nothing.
func (e shareEdge) Leads(node int32, tp shareserve.TopicPartition) error {
	b := e.b
	if b.cfg.Nodes == 1 {
		return nil
	}
	t := b.store.TopicByID(tp.TopicID)
	if t == nil || t.Partition(tp.Partition) == nil {
		return nil
	}
	l, code := b.checkLeader(node, t, tp.Partition, noEpoch)
	if code == 0 {
		return nil
	}
	return shareNotLeader{l, notLeaderErr(tp, l)}
}

// LeadsAll says a single node leads every partition, so shareserve need
// not ask Leads for each partition of a session on every ShareFetch.
func (e shareEdge) LeadsAll(int32) bool { return e.b.cfg.Nodes == 1 }

// AuthorizeRead refuses a topic the request's principal may not READ with
// errShareTopicAuthorization; requester is the *request. A topic ID that
// names no topic is answered UNKNOWN_TOPIC_ID elsewhere, not refused here.
func (e shareEdge) AuthorizeRead(requester any, id storage.TopicID) error {
	r, _ := requester.(*request)
	if r == nil || e.b.authz == nil {
		return nil
	}
	if t := e.b.store.TopicByID(id); t != nil && !r.authorized(acl.OpRead, acl.ResourceTopic, t.Name) {
		return errShareTopicAuthorization
	}
	return nil
}

// shareNotLeader is errNotLeader for a share partition, with the leader
// the answer names (KIP-951).
type shareNotLeader struct {
	leader cluster.Leadership
	error
}

func (e shareNotLeader) Unwrap() error { return e.error }

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

// fetchAckBatches and ackRequestAckBatches convert a partition's
// acknowledgement batches with two allocations, whatever their number:
// the batches and one array holding every batch's types
// (**share-ack-batches-allocations**, docs/share-groups.md §2.13). At
// thousands of partitions an answer's records come from many partitions,
// each acknowledged with its own batches, and an allocation per batch
// was one of the costs that grew with the partition count (issue 22).
func fetchAckBatches(in []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) []sharepartition.AckBatch {
	n := 0
	for _, b := range in {
		n += len(b.AcknowledgeTypes)
	}
	out := make([]sharepartition.AckBatch, len(in))
	types := make([]sharepartition.AckType, 0, n)
	for i, b := range in {
		out[i], types = ackBatch(b.FirstOffset, b.LastOffset, b.AcknowledgeTypes, types)
	}
	return out
}

func ackRequestAckBatches(in []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) []sharepartition.AckBatch {
	n := 0
	for _, b := range in {
		n += len(b.AcknowledgeTypes)
	}
	out := make([]sharepartition.AckBatch, len(in))
	types := make([]sharepartition.AckType, 0, n)
	for i, b := range in {
		out[i], types = ackBatch(b.FirstOffset, b.LastOffset, b.AcknowledgeTypes, types)
	}
	return out
}

// ackBatch converts one batch; the wire's acknowledge types are
// sharepartition's AckType values. They are appended to buf (sized for
// every batch of the partition), and the batch keeps its own part of it,
// capped so no later append reaches into it.
func ackBatch(first, last int64, types []int8, buf []sharepartition.AckType) (sharepartition.AckBatch, []sharepartition.AckType) {
	start := len(buf)
	for _, t := range types {
		buf = append(buf, sharepartition.AckType(t))
	}
	return sharepartition.AckBatch{FirstOffset: first, LastOffset: last, Types: buf[start:len(buf):len(buf)]}, buf
}
