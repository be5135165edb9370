package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
)

// GROUP config resources, share-groups.md §5.6.
func TestGroupConfigs(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	alter := func(groupID string, op kmsg.IncrementalAlterConfigOp, name, value string) int16 {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, groupID
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = name, op, &value
		rr.Configs = append(rr.Configs, c)
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Resources[0].ErrorCode
	}
	describe := func(groupID, name string) kmsg.DescribeConfigsResponseResourceConfig {
		t.Helper()
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, groupID, []string{name}
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.Resources[0].ErrorCode != 0 || len(resp.Resources[0].Configs) != 1 {
			t.Fatalf("describe %s: %v %+v", name, err, resp)
		}
		return resp.Resources[0].Configs[0]
	}

	// Configs exist for a group ID whether or not the group does.
	c := describe("no-such-group-yet", "share.record.lock.duration.ms")
	if *c.Value != "30000" || c.Source != kmsg.ConfigSourceDefaultConfig || c.ReadOnly {
		t.Fatalf("default lock duration: %s source %d read-only %v", *c.Value, c.Source, c.ReadOnly)
	}
	cases := []struct {
		name, config, value string
		op                  kmsg.IncrementalAlterConfigOp
		want                *kerr.Error
	}{
		{"set within bounds", "share.record.lock.duration.ms", "20000", kmsg.IncrementalAlterConfigOpSet, nil},
		{"below the broker minimum", "share.record.lock.duration.ms", "10000", kmsg.IncrementalAlterConfigOpSet, kerr.InvalidConfig},
		{"not a number", "share.delivery.count.limit", "five", kmsg.IncrementalAlterConfigOpSet, kerr.InvalidConfig},
		{"unknown name", "share.no.such.config", "1", kmsg.IncrementalAlterConfigOpSet, kerr.InvalidConfig},
		{"append to a scalar", "share.isolation.level", "read_committed", kmsg.IncrementalAlterConfigOpAppend, kerr.InvalidConfig},
		{"session not above heartbeat", "share.heartbeat.interval.ms", "15000", kmsg.IncrementalAlterConfigOpSet, nil},
		{"by_duration reset", "share.auto.offset.reset", "by_duration:PT1H", kmsg.IncrementalAlterConfigOpSet, nil},
		{"negative duration", "share.auto.offset.reset", "by_duration:-PT1H", kmsg.IncrementalAlterConfigOpSet, kerr.InvalidConfig},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code := alter("g", tc.op, tc.config, tc.value)
			want := int16(0)
			if tc.want != nil {
				want = tc.want.Code
			}
			if code != want {
				t.Fatalf("error code %d, want %d", code, want)
			}
		})
	}
	c = describe("g", "share.record.lock.duration.ms")
	if *c.Value != "20000" || c.Source != kmsg.ConfigSourceGroupConfig {
		t.Fatalf("after set: %s source %d", *c.Value, c.Source)
	}
	// The heartbeat interval is now 15000 and the session timeout 45000;
	// a session timeout at or below the heartbeat is refused as a whole.
	if code := alter("g", kmsg.IncrementalAlterConfigOpSet, "share.session.timeout.ms", "15000"); code != kerr.InvalidConfig.Code {
		t.Fatalf("session timeout equal to the heartbeat interval: code %d", code)
	}
	if code := alter("g", kmsg.IncrementalAlterConfigOpDelete, "share.record.lock.duration.ms", ""); code != 0 {
		t.Fatalf("delete: code %d", code)
	}
	if c = describe("g", "share.record.lock.duration.ms"); *c.Value != "30000" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("after delete: %s source %d", *c.Value, c.Source)
	}
	if code := alter("", kmsg.IncrementalAlterConfigOpSet, "share.record.lock.duration.ms", "20000"); code != kerr.InvalidRequest.Code {
		t.Fatalf("empty group ID: code %d", code)
	}
}
