// Package sharetest builds the share-group requests tests send by hand:
// ShareFetch and ShareAcknowledge with acknowledgement batches written out,
// for the validation paths no client library takes, and the
// ShareGroupHeartbeat that tracks a member's epoch. Broker tests send them
// over a bare connection, conformance through a client to each peer, so
// it only builds requests and sends through a kmsg.Requestor. It is for
// tests only.
package sharetest

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// AckBatch is one acknowledgement batch: offsets First to Last, with one
// acknowledge type for the whole range or one per offset.
type AckBatch struct {
	First, Last int64
	Types       []int8
}

// Batches is acks, of a test's own type of AckBatch's shape (declared
// there so that its positional literals stay short), as AckBatches.
func Batches[B ~struct {
	First, Last int64
	Types       []int8
}](acks []B) []AckBatch {
	out := make([]AckBatch, len(acks))
	for i, a := range acks {
		out[i] = AckBatch(a)
	}
	return out
}

// Part names one partition of a ShareFetch with its acknowledgement
// batches; MaxBytes 0 leaves PartitionMaxBytes unset.
type Part struct {
	Partition int32
	MaxBytes  int32
	Acks      []AckBatch
}

// FetchRequest is a ShareFetch from member of group at session epoch for
// parts of topic: no wait, MinBytes 1, 1 MiB, up to 500 records. The
// caller sets the version and changes anything else before sending.
func FetchRequest(group, member string, epoch int32, topic [16]byte, parts ...Part) *kmsg.ShareFetchRequest {
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr(member), epoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 0, 1, 1<<20, 500, 500
	tp := kmsg.NewShareFetchRequestTopic()
	tp.TopicID = topic
	for _, part := range parts {
		p := kmsg.NewShareFetchRequestTopicPartition()
		p.Partition = part.Partition
		if part.MaxBytes != 0 {
			p.PartitionMaxBytes = part.MaxBytes
		}
		for _, a := range part.Acks {
			b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
			b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = a.First, a.Last, a.Types
			p.AcknowledgementBatches = append(p.AcknowledgementBatches, b)
		}
		tp.Partitions = append(tp.Partitions, p)
	}
	req.Topics = append(req.Topics, tp)
	return req
}

// AckRequest is a ShareAcknowledge from member of group at session epoch
// for partition 0 of topic. The caller sets the version and IsRenewAck.
func AckRequest(group, member string, epoch int32, topic [16]byte, acks []AckBatch) *kmsg.ShareAcknowledgeRequest {
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr(member), epoch
	tp := kmsg.NewShareAcknowledgeRequestTopic()
	tp.TopicID = topic
	p := kmsg.NewShareAcknowledgeRequestTopicPartition()
	for _, a := range acks {
		b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = a.First, a.Last, a.Types
		p.AcknowledgementBatches = append(p.AcknowledgementBatches, b)
	}
	tp.Partitions = append(tp.Partitions, p)
	req.Topics = append(req.Topics, tp)
	return req
}

// Heartbeat sends one ShareGroupHeartbeat for member memberID of group at
// *epoch, subscribed to topics (nil: unchanged), and moves *epoch to the
// answer's when it is not an error.
func Heartbeat(t testing.TB, ctx context.Context, cl kmsg.Requestor, group, memberID string, epoch *int32, topics []string) *kmsg.ShareGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = group, memberID, *epoch, topics
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
	if resp.ErrorCode == 0 {
		*epoch = resp.MemberEpoch
	}
	return resp
}
