package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The injected code lands at the shallowest level the request's version
// encodes, and the response lists mirror the request's.
func TestErrorResponseShape(t *testing.T) {
	const code = 6
	t.Run("produce sets each partition", func(t *testing.T) {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(9)
		for _, name := range []string{"a", "b"} {
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = name
			for p := range int32(2) {
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Partition = p
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		resp := ErrorResponse(req, code).(*kmsg.ProduceResponse)
		if len(resp.Topics) != 2 || resp.Topics[1].Topic != "b" {
			t.Fatalf("topics %+v", resp.Topics)
		}
		for _, rt := range resp.Topics {
			if len(rt.Partitions) != 2 || rt.Partitions[1].Partition != 1 {
				t.Fatalf("partitions of %s: %+v", rt.Topic, rt.Partitions)
			}
			for _, p := range rt.Partitions {
				if p.ErrorCode != code {
					t.Errorf("%s/%d: error %d, want %d", rt.Topic, p.Partition, p.ErrorCode, code)
				}
			}
		}
	})
	t.Run("join group sets the top level", func(t *testing.T) {
		req := kmsg.NewPtrJoinGroupRequest()
		req.SetVersion(5)
		req.Group = "g"
		if resp := ErrorResponse(req, code).(*kmsg.JoinGroupResponse); resp.ErrorCode != code {
			t.Fatalf("error code %d", resp.ErrorCode)
		}
	})
	for _, tc := range []struct {
		version  int16
		topLevel bool
	}{{3, true}, {4, false}} {
		t.Run("find coordinator v"+string(rune('0'+tc.version)), func(t *testing.T) {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.SetVersion(tc.version)
			req.CoordinatorKey = "g"
			req.CoordinatorKeys = []string{"g", "h"}
			resp := ErrorResponse(req, code).(*kmsg.FindCoordinatorResponse)
			if tc.topLevel {
				if resp.ErrorCode != code {
					t.Fatalf("top-level error %d", resp.ErrorCode)
				}
				return
			}
			if resp.ErrorCode != 0 || len(resp.Coordinators) != 2 {
				t.Fatalf("v4: top-level error %d, coordinators %+v", resp.ErrorCode, resp.Coordinators)
			}
			for i, c := range resp.Coordinators {
				if c.Key != req.CoordinatorKeys[i] || c.ErrorCode != code {
					t.Errorf("coordinator %d: %+v", i, c)
				}
			}
		})
	}
	t.Run("metadata v12 sets each topic", func(t *testing.T) {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(12)
		name := "t"
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = &name
		req.Topics = append(req.Topics, rt)
		resp := ErrorResponse(req, code).(*kmsg.MetadataResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || *resp.Topics[0].Topic != "t" || resp.Topics[0].ErrorCode != code {
			t.Fatalf("response %+v", resp)
		}
	})
}
