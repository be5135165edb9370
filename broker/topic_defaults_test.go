package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
)

// TestCreateTopicsDefaultsShared: every topic created without overrides
// is answered from one description of the defaults, made once
// (broker/topic_config.go topicDefaults), and a topic with overrides from
// a copy of it. The copy must not leak into the shared one: a topic
// created without overrides after one with them answers, and describes,
// only the defaults; the one with them answers its override, with the
// default as its synonym, and the same defaults for the rest.
func TestCreateTopicsDefaultsShared(t *testing.T) {
	_, addr := startBroker(t, broker.Config{Props: map[string]string{"log.retention.bytes": "1000"}})
	ctx, cl, adm := newAdmin(t, addr)
	create := func(topic string, configs map[string]string) map[string]kmsg.CreateTopicsResponseTopicConfig {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, -1
		for k, v := range configs {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, ptr(v)
			rt.Configs = append(rt.Configs, c)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("create %s: %v %+v", topic, err, resp)
		}
		out := map[string]kmsg.CreateTopicsResponseTopicConfig{}
		for _, c := range resp.Topics[0].Configs {
			out[c.Name] = c
		}
		return out
	}
	plainA := create("plain-a", nil)
	tuned := create("tuned", map[string]string{"retention.ms": "60000"})
	plainB := create("plain-b", nil)

	if len(plainA) == 0 || len(plainA) != len(plainB) || len(tuned) != len(plainA) {
		t.Fatalf("answered %d, %d and %d configs; want the same number, more than none", len(plainA), len(tuned), len(plainB))
	}
	for name, a := range plainA {
		b, tc := plainB[name], tuned[name]
		if deref(a.Value) != deref(b.Value) || a.Source != b.Source {
			t.Errorf("%s: plain-a answers %s (%d), plain-b %s (%d)", name, deref(a.Value), a.Source, deref(b.Value), b.Source)
		}
		if name == "retention.ms" {
			continue
		}
		if deref(tc.Value) != deref(a.Value) || tc.Source != a.Source {
			t.Errorf("%s: tuned answers %s (%d), the defaults %s (%d)", name, deref(tc.Value), tc.Source, deref(a.Value), a.Source)
		}
	}
	if c := plainB["retention.ms"]; deref(c.Value) != "604800000" || c.Source != int8(kmsg.ConfigSourceDefaultConfig) {
		t.Errorf("plain-b answers retention.ms=%s (%d), want the default 604800000 (%d)", deref(c.Value), c.Source, kmsg.ConfigSourceDefaultConfig)
	}
	if c := tuned["retention.ms"]; deref(c.Value) != "60000" || c.Source != int8(kmsg.ConfigSourceDynamicTopicConfig) {
		t.Errorf("tuned answers retention.ms=%s (%d), want its override 60000 (%d)", deref(c.Value), c.Source, kmsg.ConfigSourceDynamicTopicConfig)
	}
	if c := plainB["retention.bytes"]; deref(c.Value) != "1000" || c.Source != int8(kmsg.ConfigSourceStaticBrokerConfig) {
		t.Errorf("plain-b answers retention.bytes=%s (%d), want the static 1000 (%d)", deref(c.Value), c.Source, kmsg.ConfigSourceStaticBrokerConfig)
	}

	// Described after the topic with overrides was: its synonym list is
	// its own.
	tunedMs := topicConfigs(t, ctx, adm, "tuned")["retention.ms"]
	plainMs := topicConfigs(t, ctx, adm, "plain-b")["retention.ms"]
	if len(tunedMs.Synonyms) != 2 || tunedMs.Synonyms[0].Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("tuned retention.ms synonyms %+v, want its override then the default", tunedMs.Synonyms)
	}
	if len(plainMs.Synonyms) != 1 || plainMs.Synonyms[0].Source != kmsg.ConfigSourceDefaultConfig || cval(plainMs) != "604800000" {
		t.Errorf("plain-b retention.ms=%s synonyms %+v, want the default alone", cval(plainMs), plainMs.Synonyms)
	}
}

// TestAlterConfigsOfAutoCreatedTopic: a topic Metadata auto-created has
// no overrides, and IncrementalAlterConfigs SET on it sets one. On main
// before this the handler panicked writing to the topic's nil overrides
// and the connection closed (storage.Topic.UpdateConfigs).
func TestAlterConfigsOfAutoCreatedTopic(t *testing.T) {
	_, addr := startBroker(t, broker.Config{Props: map[string]string{"auto.create.topics.enable": "true"}})
	ctx, cl, adm := newAdmin(t, addr)
	req := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic, req.AllowAutoTopicCreation = ptr("auto-made"), true
	req.Topics = append(req.Topics, mt)
	if resp, err := req.RequestWith(ctx, cl); err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("auto-create through Metadata: %v %+v", err, resp)
	}
	resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: ptr("60000")}}, "auto-made")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := resps.On("auto-made", nil); err != nil || r.Err != nil {
		t.Fatalf("set retention.ms: %v %v", err, r.Err)
	}
	if c := topicConfigs(t, ctx, adm, "auto-made")["retention.ms"]; cval(c) != "60000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.ms = %s from %v, want the override 60000", cval(c), c.Source)
	}
}
