// Package testadmin holds the admin requests tests make through a client
// to set a broker up or look into it: sharebroker in broker tests, each
// peer in conformance, the container image in containertest. It needs only
// a kmsg.Requestor (a kgo client), so it works against any broker. It is
// for tests only.
package testadmin

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// SetGroupConfig sets one GROUP config, e.g. share.auto.offset.reset.
func SetGroupConfig(t testing.TB, ctx context.Context, cl kmsg.Requestor, groupID, name, value string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, groupID
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = name, kmsg.IncrementalAlterConfigOpSet, &value
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("set %s=%s on group %s: %v %+v", name, value, groupID, err, resp)
	}
}

// DescribeShareGroup returns ShareGroupDescribe's answer for one group.
func DescribeShareGroup(t testing.TB, ctx context.Context, cl kmsg.Requestor, groupID string) kmsg.ShareGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{groupID}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Groups) != 1 {
		t.Fatalf("describe: %v %+v", err, resp)
	}
	return resp.Groups[0]
}

// AssignedCount is how many partitions a ShareGroupHeartbeat answer
// assigns; topic IDs differ between brokers, so the count is what compares.
func AssignedCount(resp *kmsg.ShareGroupHeartbeatResponse) int {
	n := 0
	if resp.Assignment != nil {
		for _, tp := range resp.Assignment.TopicPartitions {
			n += len(tp.Partitions)
		}
	}
	return n
}
