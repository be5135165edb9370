package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Rules: group-config-release and assignment-configs-inert
// (docs/share-groups.md §5.6). Kafka 4.3 added share.renew.acknowledge.enable
// (KAFKA-20161, default true), the KIP-1240 per-group limits and
// KAFKA-20251's {consumer,share,streams}.assignment.interval.ms and
// .assignor.offload.enable; GroupConfig.validateNames of a 4.2 broker
// refuses them as unknown names. On main the assignment configs were
// refused under every release and the 4.3 names accepted under 4.2.
func TestGroupConfigRelease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alter := func(cl *kgo.Client, name, value string) (int16, string) {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "g"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = name, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(value)
		rr.Configs = append(rr.Configs, c)
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		msg := ""
		if m := resp.Resources[0].ErrorMessage; m != nil {
			msg = *m
		}
		return resp.Resources[0].ErrorCode, msg
	}
	describe := func(cl *kgo.Client) map[string]string {
		t.Helper()
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "g"
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, c := range resp.Resources[0].Configs {
			out[c.Name] = *c.Value
		}
		return out
	}
	client := func(addr string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	added43 := []string{"share.renew.acknowledge.enable", "share.delivery.count.limit", "share.partition.max.record.locks",
		"consumer.assignment.interval.ms", "consumer.assignor.offload.enable", "share.assignment.interval.ms",
		"share.assignor.offload.enable", "streams.assignment.interval.ms", "streams.assignor.offload.enable"}

	for _, rel := range []string{"4.3", "4.4"} {
		cl := client(startRelease(t, rel, nil))
		got := describe(cl)
		for name, want := range map[string]string{"share.renew.acknowledge.enable": "true",
			"consumer.assignment.interval.ms": "1000", "share.assignor.offload.enable": "false"} {
			if got[name] != want {
				t.Errorf("%s: %s described as %q, want %q", rel, name, got[name], want)
			}
		}
		for _, kv := range [][2]string{{"consumer.assignment.interval.ms", "0"}, {"share.assignment.interval.ms", "15000"},
			{"streams.assignor.offload.enable", "TRUE"}} {
			if code, msg := alter(cl, kv[0], kv[1]); code != 0 {
				t.Errorf("%s: %s=%s refused: %v %s", rel, kv[0], kv[1], kerr.ErrorForCode(code), msg)
			}
		}
		if d := describe(cl); d["share.assignment.interval.ms"] != "15000" {
			t.Errorf("%s: stored share.assignment.interval.ms described as %q", rel, d["share.assignment.interval.ms"])
		}
		for _, c := range []struct{ name, value, want string }{
			{"share.assignment.interval.ms", "15001", "share.assignment.interval.ms must be in the range 0 to 15000 inclusive."},
			{"consumer.assignment.interval.ms", "-1", "Invalid value -1 for configuration consumer.assignment.interval.ms: Value must be at least 0"},
			{"consumer.assignor.offload.enable", "yes", "Invalid value yes for configuration consumer.assignor.offload.enable: Expected value to be either true or false"},
		} {
			code, msg := alter(cl, c.name, c.value)
			if code != kerr.InvalidConfig.Code || msg != c.want {
				t.Errorf("%s: %s=%s: %v %q, want INVALID_CONFIG %q", rel, c.name, c.value, kerr.ErrorForCode(code), msg, c.want)
			}
		}
	}

	cl := client(startRelease(t, "4.2", nil))
	got := describe(cl)
	for _, name := range added43 {
		if _, ok := got[name]; ok {
			t.Errorf("4.2 describes %s", name)
		}
		code, msg := alter(cl, name, "1000")
		if code != kerr.InvalidConfig.Code || msg != "Unknown group config name: "+name {
			t.Errorf("4.2: %s: %v %q, want INVALID_CONFIG unknown name", name, kerr.ErrorForCode(code), msg)
		}
	}
	if code, msg := alter(cl, "share.record.lock.duration.ms", "20000"); code != 0 {
		t.Errorf("4.2: a 4.2 config refused: %v %s", kerr.ErrorForCode(code), msg)
	}
}
