package broker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/locktimer"
)

// topicConfigs describes one topic through kadm and returns its configs by
// name.
func topicConfigs(t *testing.T, ctx context.Context, adm *kadm.Client, topic string) map[string]kadm.Config {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %s: %v %v", topic, err, rc.Err)
	}
	out := make(map[string]kadm.Config)
	for _, c := range rc.Configs {
		out[c.Key] = c
	}
	return out
}

func TestAdminDescribeTopicConfigs(t *testing.T) {
	_, addr := startBroker(t, broker.Config{Props: map[string]string{"log.retention.bytes": "1000"}})
	ctx, _, adm := newAdmin(t, addr)
	mustCreate(t, ctx, adm, "described", 1, map[string]*string{"retention.ms": ptr("60000")})

	configs := topicConfigs(t, ctx, adm, "described")
	type syn struct {
		name, value string
		source      kmsg.ConfigSource
	}
	tests := []struct {
		name     string
		value    string
		source   kmsg.ConfigSource
		synonyms []syn
	}{
		{"retention.ms", "60000", kmsg.ConfigSourceDynamicTopicConfig, []syn{
			{"retention.ms", "60000", kmsg.ConfigSourceDynamicTopicConfig},
			{"log.retention.ms", "604800000", kmsg.ConfigSourceDefaultConfig},
		}},
		{"retention.bytes", "1000", kmsg.ConfigSourceStaticBrokerConfig, []syn{
			{"log.retention.bytes", "1000", kmsg.ConfigSourceStaticBrokerConfig},
			{"log.retention.bytes", "-1", kmsg.ConfigSourceDefaultConfig},
		}},
		{"cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig, []syn{
			{"log.cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig},
		}},
		{"segment.ms", "604800000", kmsg.ConfigSourceDefaultConfig, []syn{
			{"log.roll.ms", "604800000", kmsg.ConfigSourceDefaultConfig},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := configs[tt.name]
			if !ok {
				t.Fatalf("%s not described", tt.name)
			}
			if cval(c) != tt.value || c.Source != tt.source || c.Sensitive {
				t.Fatalf("got %s=%s from %v, want %s from %v", c.Key, cval(c), c.Source, tt.value, tt.source)
			}
			if len(c.Synonyms) != len(tt.synonyms) {
				t.Fatalf("synonyms %+v, want %+v", c.Synonyms, tt.synonyms)
			}
			for i, s := range c.Synonyms {
				if got := (syn{s.Key, deref(s.Value), s.Source}); got != tt.synonyms[i] {
					t.Fatalf("synonym %d: %+v, want %+v", i, got, tt.synonyms[i])
				}
			}
		})
	}
	if _, ok := configs["log.retention.ms"]; ok {
		t.Error("a broker property is described as a topic config")
	}
}

func TestAdminDescribeConfigsRaw(t *testing.T) {
	_, addr := startBroker(t, broker.Config{NodeID: 2, Props: map[string]string{"num.partitions": "4"}})
	ctx, cl, adm := newAdmin(t, addr)
	mustCreate(t, ctx, adm, "raw", 1, nil)

	tests := []struct {
		name         string
		typ          kmsg.ConfigResourceType
		resource     string
		configNames  []string
		want         *kerr.Error
		emptyMessage bool     // the error has ErrorMessage "", as in Kafka
		wantConfigs  []string // names, in order; nil skips the check
	}{
		{name: "topic by name", typ: kmsg.ConfigResourceTypeTopic, resource: "raw", configNames: []string{"retention.ms", "no.such.config", "cleanup.policy"},
			wantConfigs: []string{"cleanup.policy", "retention.ms"}},
		// An empty name list means every config, as a null one does
		// (answers-as-kafka; TestAnswersAsKafkaDescribeConfigs checks it).
		{name: "topic, empty name list", typ: kmsg.ConfigResourceTypeTopic, resource: "raw", configNames: []string{}},
		// Kafka's ConfigHelper sets no message for an unknown topic: "".
		{name: "unknown topic", typ: kmsg.ConfigResourceTypeTopic, resource: "nope", want: kerr.UnknownTopicOrPartition, emptyMessage: true},
		{name: "invalid topic name", typ: kmsg.ConfigResourceTypeTopic, resource: "a b", want: kerr.InvalidTopicException},
		{name: "broker by ID", typ: kmsg.ConfigResourceTypeBroker, resource: "2", configNames: []string{"num.partitions"}, wantConfigs: []string{"num.partitions"}},
		{name: "cluster default broker", typ: kmsg.ConfigResourceTypeBroker, resource: "", wantConfigs: []string{}},
		{name: "another broker", typ: kmsg.ConfigResourceTypeBroker, resource: "7", want: kerr.InvalidRequest},
		{name: "broker name not a number", typ: kmsg.ConfigResourceTypeBroker, resource: "two", want: kerr.InvalidRequest},
		{name: "broker logger", typ: 8, resource: "2", want: kerr.InvalidRequest},
		{name: "group", typ: 32, resource: "g", configNames: []string{"share.record.lock.duration.ms"}, wantConfigs: []string{"share.record.lock.duration.ms"}},
		{name: "group without a name", typ: 32, resource: "", want: kerr.InvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := kmsg.NewPtrDescribeConfigsRequest()
			req.IncludeSynonyms, req.IncludeDocumentation = true, true
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName, rr.ConfigNames = tt.typ, tt.resource, tt.configNames
			req.Resources = append(req.Resources, rr)
			kresp, err := cl.Broker(2).Request(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			resp := kresp.(*kmsg.DescribeConfigsResponse)
			if resp.Version != 4 {
				t.Fatalf("answered v%d, want v4", resp.Version)
			}
			sr := resp.Resources[0]
			if tt.emptyMessage {
				if sr.ErrorCode != tt.want.Code || sr.ErrorMessage == nil || *sr.ErrorMessage != "" {
					t.Fatalf("answered %v with message %s, want %v with \"\"", kerr.ErrorForCode(sr.ErrorCode), deref(sr.ErrorMessage), tt.want)
				}
			} else {
				wantErr(t, sr.ErrorCode, sr.ErrorMessage, tt.want)
			}
			if tt.wantConfigs == nil {
				return
			}
			var names []string
			for _, c := range sr.Configs {
				names = append(names, c.Name)
				if c.Documentation == nil || *c.Documentation == "" || c.ConfigType == 0 {
					t.Errorf("%s: documentation %v, type %v", c.Name, deref(c.Documentation), c.ConfigType)
				}
			}
			if strings.Join(names, ",") != strings.Join(tt.wantConfigs, ",") {
				t.Fatalf("configs %v, want %v", names, tt.wantConfigs)
			}
		})
	}
}

func TestAdminDescribeBrokerConfigs(t *testing.T) {
	_, addr := startBroker(t, broker.Config{Props: map[string]string{"num.partitions": "4"}})
	ctx, _, adm := newAdmin(t, addr)
	rcs, err := adm.DescribeBrokerConfigs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("0", nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe broker 0: %v %v", err, rc.Err)
	}
	got := make(map[string]kadm.Config)
	for _, c := range rc.Configs {
		got[c.Key] = c
	}
	tests := []struct {
		name, value string
		source      kmsg.ConfigSource
		synonyms    int
	}{
		{"num.partitions", "4", kmsg.ConfigSourceStaticBrokerConfig, 2},
		{"log.retention.ms", "604800000", kmsg.ConfigSourceDefaultConfig, 1},
		{"delete.topic.enable", "true", kmsg.ConfigSourceDefaultConfig, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := got[tt.name]
			if !ok || cval(c) != tt.value || c.Source != tt.source || len(c.Synonyms) != tt.synonyms {
				t.Fatalf("got %+v, want %s from %v with %d synonyms", c, tt.value, tt.source, tt.synonyms)
			}
		})
	}
	if _, ok := got["retention.ms"]; ok {
		t.Error("a topic property is described as a broker config")
	}
}

// alterOp is one IncrementalAlterConfigs operation, for raw requests.
func alterOp(op kmsg.IncrementalAlterConfigOp, name string, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Op, c.Name, c.Value = op, name, value
	return c
}

func TestAdminIncrementalAlterConfigs(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	ctx, cl, adm := newAdmin(t, addr)
	mustCreate(t, ctx, adm, "altered", 1, map[string]*string{"segment.ms": ptr("1000")})

	steps := []struct {
		name   string
		alters []kadm.AlterConfig
		want   map[string]string // effective values afterwards
	}{
		{"set", []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: ptr("5000")}},
			map[string]string{"retention.ms": "5000", "segment.ms": "1000"}},
		{"append to the default", []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: ptr("compact")}},
			map[string]string{"cleanup.policy": "delete,compact"}},
		{"append present item", []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: ptr("delete")}},
			map[string]string{"cleanup.policy": "delete,compact"}},
		{"subtract", []kadm.AlterConfig{{Op: kadm.SubtractConfig, Name: "cleanup.policy", Value: ptr("delete")}},
			map[string]string{"cleanup.policy": "compact"}},
		{"delete and set together", []kadm.AlterConfig{
			{Op: kadm.DeleteConfig, Name: "retention.ms"},
			{Op: kadm.SetConfig, Name: "max.message.bytes", Value: ptr("2048")},
		}, map[string]string{"retention.ms": "604800000", "max.message.bytes": "2048", "segment.ms": "1000"}},
		{"delete an unset config", []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "flush.ms"}},
			map[string]string{"flush.ms": "9223372036854775807"}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			resps, err := adm.AlterTopicConfigs(ctx, st.alters, "altered")
			if err != nil {
				t.Fatal(err)
			}
			if r, _ := resps.On("altered", nil); r.Err != nil {
				t.Fatalf("alter: %v %s", r.Err, r.ErrMessage)
			}
			configs := topicConfigs(t, ctx, adm, "altered")
			for name, want := range st.want {
				if got := cval(configs[name]); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
		})
	}

	tests := []struct {
		name     string
		typ      kmsg.ConfigResourceType
		resource string
		ops      []kmsg.IncrementalAlterConfigsRequestResourceConfig
		want     *kerr.Error
		wantText string
	}{
		{name: "append to a non-list", resource: "altered", ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			alterOp(kmsg.IncrementalAlterConfigOpAppend, "retention.ms", ptr("1"))}, want: kerr.InvalidConfig, wantText: "retention.ms"},
		{name: "subtract to empty", resource: "altered", ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			alterOp(kmsg.IncrementalAlterConfigOpSubtract, "cleanup.policy", ptr("compact"))}, want: kerr.InvalidConfig, wantText: "cleanup.policy"},
		{name: "set unknown config", resource: "altered", ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			alterOp(kmsg.IncrementalAlterConfigOpSet, "retention.days", ptr("1"))}, want: kerr.InvalidConfig, wantText: "retention.days"},
		{name: "delete unknown config", resource: "altered", ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			alterOp(kmsg.IncrementalAlterConfigOpDelete, "retention.days", nil)}, want: kerr.InvalidConfig, wantText: "retention.days"},
		{name: "set invalid value", resource: "altered", ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			alterOp(kmsg.IncrementalAlterConfigOpSet, "message.timestamp.type", ptr("Now"))}, want: kerr.InvalidConfig, wantText: "message.timestamp.type"},
		{name: "set null", resource: "altered", ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			alterOp(kmsg.IncrementalAlterConfigOpSet, "retention.ms", nil)}, want: kerr.InvalidRequest},
		{name: "unknown operation", resource: "altered", ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			alterOp(9, "retention.ms", ptr("1"))}, want: kerr.InvalidRequest},
		{name: "config given twice", resource: "altered", ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			alterOp(kmsg.IncrementalAlterConfigOpSet, "retention.ms", ptr("1")),
			alterOp(kmsg.IncrementalAlterConfigOpDelete, "retention.ms", nil)}, want: kerr.InvalidRequest},
		{name: "unknown topic", resource: "nope", ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			alterOp(kmsg.IncrementalAlterConfigOpSet, "retention.ms", ptr("1"))}, want: kerr.UnknownTopicOrPartition},
		{name: "broker config", typ: kmsg.ConfigResourceTypeBroker, resource: "0", ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			alterOp(kmsg.IncrementalAlterConfigOpSet, "num.partitions", ptr("3"))}, want: kerr.InvalidRequest, wantText: "num.partitions"},
		{name: "cluster default broker config", typ: kmsg.ConfigResourceTypeBroker, resource: "", ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			alterOp(kmsg.IncrementalAlterConfigOpSet, "log.retention.ms", ptr("3"))}, want: kerr.InvalidRequest, wantText: "log.retention.ms"},
		{name: "broker, no change", typ: kmsg.ConfigResourceTypeBroker, resource: "0"},
		{name: "client metrics, no change", typ: kmsg.ConfigResourceTypeClientMetrics, resource: "m"}, // docs/telemetry.md
		{name: "broker logger", typ: kmsg.ConfigResourceTypeBrokerLogger, resource: "0", want: kerr.InvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName, rr.Configs = tt.typ, tt.resource, tt.ops
			if rr.ResourceType == 0 {
				rr.ResourceType = kmsg.ConfigResourceTypeTopic
			}
			req.Resources = append(req.Resources, rr)
			kresp, err := cl.Broker(0).Request(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			sr := kresp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
			wantErr(t, sr.ErrorCode, sr.ErrorMessage, tt.want)
			if !strings.Contains(deref(sr.ErrorMessage), tt.wantText) {
				t.Fatalf("message %q does not mention %q", deref(sr.ErrorMessage), tt.wantText)
			}
		})
	}
	// None of the failed alters changed anything.
	if got := cval(topicConfigs(t, ctx, adm, "altered")["cleanup.policy"]); got != "compact" {
		t.Fatalf("cleanup.policy = %q after failed alters, want compact", got)
	}

	t.Run("validate only", func(t *testing.T) {
		resps, err := adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: ptr("1")}}, "altered")
		if err != nil || resps[0].Err != nil {
			t.Fatalf("validate: %v %v", err, resps)
		}
		if got := topicConfigs(t, ctx, adm, "altered")["retention.ms"]; got.Source != kmsg.ConfigSourceDefaultConfig {
			t.Fatalf("ValidateOnly changed retention.ms: %+v", got)
		}
	})
	t.Run("duplicate resource", func(t *testing.T) {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		for range 2 {
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "altered"
			req.Resources = append(req.Resources, rr)
		}
		kresp, err := cl.Broker(0).Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, sr := range kresp.(*kmsg.IncrementalAlterConfigsResponse).Resources {
			wantErr(t, sr.ErrorCode, sr.ErrorMessage, kerr.InvalidRequest)
		}
	})
}

func TestAdminAlterConfigsReplacesOverrides(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	ctx, cl, adm := newAdmin(t, addr)
	mustCreate(t, ctx, adm, "replaced", 1, map[string]*string{"segment.ms": ptr("1000"), "retention.ms": ptr("2000")})

	resps, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: ptr("3000")}}, "replaced")
	if err != nil || resps[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, resps)
	}
	configs := topicConfigs(t, ctx, adm, "replaced")
	if c := configs["retention.ms"]; cval(c) != "3000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("retention.ms: %+v", c)
	}
	if c := configs["segment.ms"]; c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("segment.ms kept its override: %+v", c)
	}

	config := func(name string, value *string) kmsg.AlterConfigsRequestResourceConfig {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = name, value
		return c
	}
	tests := []struct {
		name     string
		typ      kmsg.ConfigResourceType
		resource string
		configs  []kmsg.AlterConfigsRequestResourceConfig
		want     *kerr.Error
	}{
		{name: "unknown config", resource: "replaced", configs: []kmsg.AlterConfigsRequestResourceConfig{config("nope.ms", ptr("1"))}, want: kerr.InvalidConfig},
		{name: "invalid value", resource: "replaced", configs: []kmsg.AlterConfigsRequestResourceConfig{config("retention.bytes", ptr("-5"))}, want: kerr.InvalidConfig},
		{name: "null value", resource: "replaced", configs: []kmsg.AlterConfigsRequestResourceConfig{config("retention.ms", nil)}, want: kerr.InvalidRequest},
		{name: "unknown topic", resource: "nope", want: kerr.UnknownTopicOrPartition},
		{name: "invalid topic name", resource: "no/pe", want: kerr.InvalidTopicException},
		{name: "broker config", typ: kmsg.ConfigResourceTypeBroker, resource: "0", configs: []kmsg.AlterConfigsRequestResourceConfig{config("num.partitions", ptr("2"))}, want: kerr.InvalidRequest},
		{name: "another broker", typ: kmsg.ConfigResourceTypeBroker, resource: "1", want: kerr.InvalidRequest},
		{name: "unknown resource type", typ: 99, resource: "x", want: kerr.InvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := kmsg.NewPtrAlterConfigsRequest()
			rr := kmsg.NewAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName, rr.Configs = tt.typ, tt.resource, tt.configs
			if rr.ResourceType == 0 {
				rr.ResourceType = kmsg.ConfigResourceTypeTopic
			}
			req.Resources = append(req.Resources, rr)
			kresp, err := cl.Broker(0).Request(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			sr := kresp.(*kmsg.AlterConfigsResponse).Resources[0]
			wantErr(t, sr.ErrorCode, sr.ErrorMessage, tt.want)
		})
	}
	if got := cval(topicConfigs(t, ctx, adm, "replaced")["retention.ms"]); got != "3000" {
		t.Fatalf("retention.ms = %q after failed alters, want 3000", got)
	}
}

// TestAdminAlterRetentionApplies checks that lowering retention takes effect
// when the alter returns, without waiting for the retention timer.
func TestAdminAlterRetentionApplies(t *testing.T) {
	clock := locktimer.NewManualClock(time.Now())
	_, addr := startBroker(t, broker.Config{Clock: clock})
	ctx, cl, adm := newAdmin(t, addr)
	mustCreate(t, ctx, adm, "bytes", 1, nil)
	mustCreate(t, ctx, adm, "time", 1, nil)
	produceN(t, ctx, cl, "bytes", 5)
	produceN(t, ctx, cl, "time", 5)

	// kgo stamps records with the wall clock; two hours on, they are older
	// than the one-hour retention set below.
	clock.Advance(2 * time.Hour)
	for topic, alter := range map[string]kadm.AlterConfig{
		"bytes": {Op: kadm.SetConfig, Name: "retention.bytes", Value: ptr("0")},
		"time":  {Op: kadm.SetConfig, Name: "retention.ms", Value: ptr("3600000")},
	} {
		resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{alter}, topic)
		if err != nil || resps[0].Err != nil {
			t.Fatalf("alter %s: %v %+v", topic, err, resps)
		}
	}
	starts, err := adm.ListStartOffsets(ctx, "bytes", "time")
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"bytes", "time"} {
		if o, _ := starts.Lookup(topic, 0); o.Offset != 5 {
			t.Errorf("%s: log start %d after lowering retention, want 5", topic, o.Offset)
		}
	}
}

// cval is a described config's value, "" for null.
func cval(c kadm.Config) string { return deref(c.Value) }
