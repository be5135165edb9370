package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/internal/rawconn"
)

// kafkaUnsupportedVersionText is Errors.UNSUPPORTED_VERSION.message().
const kafkaUnsupportedVersionText = "The version of API is not supported."

// TestFeatureGateAnswers: features-gate-answer (docs/features.md). With
// share.version 0 (--kafka-version 4.1) and group.version 0 each gated API
// is answered field by field as Kafka's KafkaApis answers it when
// isShareGroupProtocolEnabled / isConsumerGroupProtocolEnabled is false:
// the request's getErrorResponse(UNSUPPORTED_VERSION) for all but
// DescribeShareGroupOffsets, whose handler builds one entry per group.
// Kafka 4.2's sources: ShareGroupHeartbeatRequest, ShareFetchRequest
// (ShareFetchResponse.of), ShareAcknowledgeRequest and
// ConsumerGroupHeartbeatRequest set the top-level code alone, no message;
// ShareGroupDescribeRequest and ConsumerGroupDescribeRequest one group per
// ID with the code alone; handleDescribeShareGroupOffsetsRequest one group
// per ID with the code alone and no topics;
// AlterShareGroupOffsetsRequest and DeleteShareGroupOffsetsRequest the
// top-level code with Errors.message() and no topics.
func TestFeatureGateAnswers(t *testing.T) {
	addr := startRelease(t, "4.1", nil)
	if resp := updateRaw(t, addr, 2, false, "group.version", 0, 2); resp.ErrorCode != 0 {
		t.Fatalf("group.version downgrade: %d %s", resp.ErrorCode, strp(resp.ErrorMessage))
	}
	const unsupported = 35 // kerr.UnsupportedVersion.Code
	if kerr.UnsupportedVersion.Code != unsupported {
		t.Fatal("UNSUPPORTED_VERSION is not 35")
	}
	send := func(req kmsg.Request) kmsg.Response { return rawconn.Dial(t, addr).Request(req) }
	member := kmsg.StringPtr("m1-aaaaaaaaaaaaaaaaaaaa")

	{
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.Version, req.GroupID, req.MemberID, req.SubscribedTopicNames = 1, "g", *member, []string{"t"}
		r := send(req).(*kmsg.ShareGroupHeartbeatResponse)
		if r.ErrorCode != unsupported || r.ErrorMessage != nil || r.MemberID != nil || r.Assignment != nil || r.HeartbeatIntervalMillis != 0 {
			t.Errorf("ShareGroupHeartbeat: %+v", r)
		}
	}
	{
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.Version, req.GroupIDs = 1, []string{"g", "h"}
		r := send(req).(*kmsg.ShareGroupDescribeResponse)
		if len(r.Groups) != 2 {
			t.Errorf("ShareGroupDescribe: %d groups for 2 IDs", len(r.Groups))
		}
		for i, g := range r.Groups {
			if g.GroupID != req.GroupIDs[i] || g.ErrorCode != unsupported || g.ErrorMessage != nil || g.GroupState != "" || len(g.Members) != 0 {
				t.Errorf("ShareGroupDescribe group %d: %+v", i, g)
			}
		}
	}
	{
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.Version, req.GroupID, req.MemberID, req.ShareSessionEpoch = 1, kmsg.StringPtr("g"), member, 1
		rt := kmsg.NewShareAcknowledgeRequestTopic()
		rt.TopicID = [16]byte{1}
		rt.Partitions = append(rt.Partitions, kmsg.NewShareAcknowledgeRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
		r := send(req).(*kmsg.ShareAcknowledgeResponse)
		if r.ErrorCode != unsupported || r.ErrorMessage != nil || len(r.Topics) != 0 || len(r.NodeEndpoints) != 0 {
			t.Errorf("ShareAcknowledge: %+v", r)
		}
	}
	{
		req := kmsg.NewPtrShareFetchRequest()
		req.Version, req.GroupID, req.MemberID = 1, kmsg.StringPtr("g"), member
		r := send(req).(*kmsg.ShareFetchResponse)
		if r.ErrorCode != unsupported || r.ErrorMessage != nil || len(r.Topics) != 0 || len(r.NodeEndpoints) != 0 || r.AcquisitionLockTimeoutMillis != 0 {
			t.Errorf("ShareFetch: %+v", r)
		}
	}
	{
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		g.GroupID = "g"
		rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		rt.Topic, rt.Partitions = "t", []int32{0}
		g.Topics = append(g.Topics, rt)
		req.Groups = append(req.Groups, g)
		r := send(req).(*kmsg.DescribeShareGroupOffsetsResponse)
		if len(r.Groups) != 1 || r.Groups[0].GroupID != "g" || r.Groups[0].ErrorCode != unsupported ||
			r.Groups[0].ErrorMessage != nil || len(r.Groups[0].Topics) != 0 {
			t.Errorf("DescribeShareGroupOffsets: %+v", r)
		}
	}
	{
		req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		req.GroupID = "g"
		rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r := send(req).(*kmsg.AlterShareGroupOffsetsResponse)
		if r.ErrorCode != unsupported || strp(r.ErrorMessage) != kafkaUnsupportedVersionText || len(r.Topics) != 0 {
			t.Errorf("AlterShareGroupOffsets: code %d, message %q, %d topics", r.ErrorCode, strp(r.ErrorMessage), len(r.Topics))
		}
	}
	{
		req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		req.GroupID = "g"
		rt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
		rt.Topic = "t"
		req.Topics = append(req.Topics, rt)
		r := send(req).(*kmsg.DeleteShareGroupOffsetsResponse)
		if r.ErrorCode != unsupported || strp(r.ErrorMessage) != kafkaUnsupportedVersionText || len(r.Topics) != 0 {
			t.Errorf("DeleteShareGroupOffsets: code %d, message %q, %d topics", r.ErrorCode, strp(r.ErrorMessage), len(r.Topics))
		}
	}
	{
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.RebalanceTimeoutMillis = 1, "g848", *member, 30000
		req.SubscribedTopicNames = []string{"t"}
		r := send(req).(*kmsg.ConsumerGroupHeartbeatResponse)
		if r.ErrorCode != unsupported || r.ErrorMessage != nil || r.MemberID != nil || r.Assignment != nil {
			t.Errorf("ConsumerGroupHeartbeat: %+v", r)
		}
	}
	{
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Version, req.Groups = 1, []string{"g848"}
		r := send(req).(*kmsg.ConsumerGroupDescribeResponse)
		if len(r.Groups) != 1 || r.Groups[0].Group != "g848" || r.Groups[0].ErrorCode != unsupported || r.Groups[0].ErrorMessage != nil {
			t.Errorf("ConsumerGroupDescribe: %+v", r)
		}
	}
}
