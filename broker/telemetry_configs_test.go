package broker_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/rawconn"
	"github.com/sharebroker/sharebroker/internal/testadmin"
	"github.com/sharebroker/sharebroker/internal/testbroker"
)

// configOp is one IncrementalAlterConfigs operation on a config resource.
type configOp struct {
	op    kmsg.IncrementalAlterConfigOp
	name  string
	value string
}

// alterClientMetrics sends IncrementalAlterConfigs for one CLIENT_METRICS
// resource through a real client and returns its code and message.
func alterClientMetrics(t *testing.T, cl *kgo.Client, name string, ops ...configOp) (int16, string) {
	t.Helper()
	return incrementalAlter(t, cl, kmsg.ConfigResourceTypeClientMetrics, name, ops...)
}

// incrementalAlter sends IncrementalAlterConfigs for one resource through
// a real client and returns its code and message.
func incrementalAlter(t *testing.T, cl *kgo.Client, typ kmsg.ConfigResourceType, name string, ops ...configOp) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = typ, name
	for _, o := range ops {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Op, c.Name, c.Value = o.op, o.name, kmsg.StringPtr(o.value)
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Resources[0]
	msg := ""
	if r.ErrorMessage != nil {
		msg = *r.ErrorMessage
	}
	return r.ErrorCode, msg
}

// describeClientMetrics describes one CLIENT_METRICS resource with
// synonyms, by config name.
func describeClientMetrics(t *testing.T, cl *kgo.Client, name string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeClientMetrics, name
	req.Resources = append(req.Resources, rr)
	req.IncludeSynonyms = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		t.Fatalf("describe %s: %v", name, err)
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = c
	}
	return out
}

const set, del, appendOp, subtract = kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete,
	kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract

// TestTelemetrySubscriptionConfigs: a CLIENT_METRICS subscription made
// with IncrementalAlterConfigs reaches the clients its match selects at
// once, with a new subscription ID, and not the others; DescribeConfigs
// shows it as Kafka's ConfigHelper does; deleting every config removes it
// (telemetry-subscription-configs, telemetry-match,
// telemetry-subscription-change).
func TestTelemetrySubscriptionConfigs(t *testing.T) {
	e := startTelemetry(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.b.Addr), kgo.DisableClientMetrics())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	before := e.get([16]byte{})
	id := before.ClientInstanceID

	// A subscription for another client does not reach this one, but the
	// default subscription is gone: a subscription now exists.
	if code, msg := alterClientMetrics(t, cl, "others", configOp{set, "metrics", "*"}, configOp{set, "match", "client_id=someone-else"}); code != 0 {
		t.Fatalf("alter others: %v %s", kerr.ErrorForCode(code), msg)
	}
	none := e.get(id) // at once: the subscriptions changed
	if none.ErrorCode != 0 || len(none.RequestedMetrics) != 0 || none.PushIntervalMillis != 300000 || none.SubscriptionID == before.SubscriptionID {
		t.Errorf("with a subscription for others only: %+v (before: id %d)", none, before.SubscriptionID)
	}

	if code, msg := alterClientMetrics(t, cl, "mine",
		configOp{set, "metrics", "org.apache.kafka.producer., org.apache.kafka.consumer."},
		configOp{set, "interval.ms", "2000"},
		configOp{set, "match", "client_id=raw-.*, client_software_name=unknown"}); code != 0 {
		t.Fatalf("alter mine: %v %s", kerr.ErrorForCode(code), msg)
	}
	mine := e.get(id)
	if mine.ErrorCode != 0 || mine.PushIntervalMillis != 2000 || mine.SubscriptionID == none.SubscriptionID ||
		!slices.Equal(mine.RequestedMetrics, []string{"org.apache.kafka.producer.", "org.apache.kafka.consumer."}) {
		t.Errorf("with a matching subscription: %+v", mine)
	}
	// A push with the old subscription ID is refused.
	wantTelemetryCode(t, "push with the old subscription ID", e.push(id, none.SubscriptionID, false, 0, []byte("x")), kerr.UnknownSubscriptionID)

	got := describeClientMetrics(t, cl, "mine")
	for name, want := range map[string]string{"metrics": "org.apache.kafka.producer.,org.apache.kafka.consumer.", "interval.ms": "2000", "match": "client_id=raw-.*,client_software_name=unknown"} {
		c := got[name]
		if c.Value == nil || *c.Value != want || c.Source != kmsg.ConfigSourceClientMetricsConfig || len(c.ConfigSynonyms) != 1 {
			t.Errorf("%s: %+v, want %q from CLIENT_METRICS_CONFIG with one synonym", name, c, want)
		}
	}
	if c := describeClientMetrics(t, cl, "others")["interval.ms"]; *c.Value != "300000" || c.Source != kmsg.ConfigSourceDefaultConfig || len(c.ConfigSynonyms) != 0 {
		t.Errorf("others interval.ms: %+v, want the default 300000 with no synonym", c)
	}

	// SUBTRACT and APPEND work on the lists.
	if code, msg := alterClientMetrics(t, cl, "mine", configOp{subtract, "metrics", "org.apache.kafka.consumer."}); code != 0 {
		t.Fatalf("subtract: %v %s", kerr.ErrorForCode(code), msg)
	}
	if code, msg := alterClientMetrics(t, cl, "mine", configOp{appendOp, "metrics", "org.apache.kafka.admin."}); code != 0 {
		t.Fatalf("append: %v %s", kerr.ErrorForCode(code), msg)
	}
	if c := describeClientMetrics(t, cl, "mine")["metrics"]; *c.Value != "org.apache.kafka.producer.,org.apache.kafka.admin." {
		t.Errorf("metrics after subtract and append: %q", *c.Value)
	}

	// AlterConfigs replaces every config: interval.ms and match go back to
	// their defaults, so the subscription matches every client.
	legacy := kmsg.NewPtrAlterConfigsRequest()
	lr := kmsg.NewAlterConfigsRequestResource()
	lr.ResourceType, lr.ResourceName = kmsg.ConfigResourceTypeClientMetrics, "mine"
	lc := kmsg.NewAlterConfigsRequestResourceConfig()
	lc.Name, lc.Value = "metrics", kmsg.StringPtr("org.apache.kafka.")
	lr.Configs = append(lr.Configs, lc)
	legacy.Resources = append(legacy.Resources, lr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if lresp, err := legacy.RequestWith(ctx, cl); err != nil || lresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("AlterConfigs: %v %+v", err, lresp)
	}
	if d := describeClientMetrics(t, cl, "mine"); *d["match"].Value != "" || *d["interval.ms"].Value != "300000" || *d["metrics"].Value != "org.apache.kafka." {
		t.Errorf("after AlterConfigs: match %q, interval.ms %q, metrics %q", *d["match"].Value, *d["interval.ms"].Value, *d["metrics"].Value)
	}

	// Deleting every config deletes the subscription.
	for _, name := range []string{"others", "mine"} {
		if code, msg := alterClientMetrics(t, cl, name, configOp{del, "metrics", ""}, configOp{del, "interval.ms", ""}, configOp{del, "match", ""}); code != 0 {
			t.Fatalf("delete %s: %v %s", name, kerr.ErrorForCode(code), msg)
		}
	}
	if back := e.get(id); back.ErrorCode != 0 || !slices.Equal(back.RequestedMetrics, []string{"org.apache.kafka."}) {
		t.Errorf("with no subscription left: %+v, want the default subscription again", back)
	}
}

// TestTelemetrySubscriptionConfigErrors: CLIENT_METRICS configs are
// validated as Kafka's ClientMetricsConfigs.validate does, with its codes
// and messages (telemetry-subscription-configs).
func TestTelemetrySubscriptionConfigErrors(t *testing.T) {
	e := startTelemetry(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.b.Addr), kgo.DisableClientMetrics())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, c := range []struct {
		name string
		ops  []configOp
		want *kerr.Error
		msg  string
	}{
		{"", []configOp{{set, "metrics", "*"}}, kerr.InvalidRequest, "Subscription name can't be empty"},
		{"s", []configOp{{set, "color", "blue"}}, kerr.InvalidRequest, "Unknown client metrics configuration: color"},
		{"s", []configOp{{set, "interval.ms", "99"}}, kerr.InvalidRequest, "Invalid value 99 for interval.ms, interval must be between 100 and 3600000 (1 hour)"},
		{"s", []configOp{{set, "interval.ms", "3600001"}}, kerr.InvalidRequest, "Invalid value 3600001 for interval.ms, interval must be between 100 and 3600000 (1 hour)"},
		{"s", []configOp{{set, "interval.ms", "soon"}}, kerr.InvalidConfig, "Invalid value soon for configuration interval.ms: Not a number of type INT"},
		{"s", []configOp{{set, "match", "client_color=red"}}, kerr.InvalidConfig, "Illegal client matching pattern: client_color=red"},
		{"s", []configOp{{set, "match", "client_id"}}, kerr.InvalidConfig, "Illegal client matching pattern: client_id"},
		{"s", []configOp{{set, "match", "=client_id"}}, kerr.InvalidConfig, "Illegal client matching pattern: =client_id"},
		{"s", []configOp{{set, "match", "client_id=(unclosed"}}, kerr.InvalidConfig, "Illegal client matching pattern: client_id=(unclosed"},
		// ConfigurationControlManager.incrementalAlterConfigResource refuses
		// APPEND and SUBTRACT on anything but a LIST, an unknown name too.
		{"s", []configOp{{appendOp, "interval.ms", "5"}}, kerr.InvalidConfig, "Can't APPEND to key interval.ms because its type is not LIST."},
		{"s", []configOp{{subtract, "color", "red"}}, kerr.InvalidConfig, "Can't SUBTRACT to key color because its type is not LIST."},
	} {
		// The message is Kafka's word for word, nothing before or after it.
		code, msg := alterClientMetrics(t, cl, c.name, c.ops...)
		if code != c.want.Code || msg != c.msg {
			t.Errorf("%q %+v: %v %q, want %v %q", c.name, c.ops, kerr.ErrorForCode(code), msg, c.want, c.msg)
		}
	}
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	listed, err := adm.ListConfigResources(ctx, kadm.ConfigResourceClientMetrics)
	if err != nil || listed.Err != nil || len(listed.Resources) != 0 {
		t.Errorf("after refused changes: %v %v, want no subscription", listed, err)
	}
}

// TestTelemetryListConfigResources: v0 lists the subscriptions, v1 every
// type Kafka lists in its order, a type it does not list answers
// UNSUPPORTED_VERSION (list-config-resources).
func TestTelemetryListConfigResources(t *testing.T) {
	e := startTelemetry(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.b.Addr), kgo.DisableClientMetrics())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, n := range []string{"sub-b", "sub-a"} {
		if code, msg := alterClientMetrics(t, cl, n, configOp{set, "metrics", "*"}); code != 0 {
			t.Fatalf("%s: %v %s", n, kerr.ErrorForCode(code), msg)
		}
	}
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "topic-a"); err != nil {
		t.Fatal(err)
	}
	testadmin.SetGroupConfig(t, ctx, cl, "group-a", "share.record.lock.duration.ms", "20000")
	all, err := adm.ListConfigResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if all.Err != nil {
		t.Fatal(all.Err)
	}
	for _, r := range all.Resources {
		got = append(got, r.Type.String()+":"+r.Name)
	}
	want := []string{"GROUP_CONFIG:group-a", "CLIENT_METRICS:sub-a", "CLIENT_METRICS:sub-b", "BROKER_LOGGER:0", "BROKER:0", "TOPIC:topic-a"}
	if !slices.Equal(got, want) {
		t.Errorf("v1 all types: %q, want %q", got, want)
	}

	c := rawconn.Dial(t, e.b.Addr)
	v0 := kmsg.NewPtrListConfigResourcesRequest()
	v0.Version = 0
	r0 := c.Request(v0).(*kmsg.ListConfigResourcesResponse)
	if r0.ErrorCode != 0 || len(r0.ConfigResources) != 2 || r0.ConfigResources[0].Name != "sub-a" {
		t.Errorf("v0: %+v", r0)
	}
	bad := kmsg.NewPtrListConfigResourcesRequest()
	bad.Version = 1
	bad.ResourceTypes = []int8{2, 64}
	if r := c.Request(bad).(*kmsg.ListConfigResourcesResponse); r.ErrorCode != kerr.UnsupportedVersion.Code || len(r.ConfigResources) != 0 {
		t.Errorf("v1 with type 64: %v %+v, want UNSUPPORTED_VERSION and nothing", kerr.ErrorForCode(r.ErrorCode), r.ConfigResources)
	}
}

// TestTelemetrySubscriptionsKept: with a data directory, CLIENT_METRICS
// subscriptions survive a restart, and one deleted stays deleted
// (docs/durability.md client-metrics-kept).
func TestTelemetrySubscriptionsKept(t *testing.T) {
	dir := t.TempDir()
	b1 := testbroker.Start(t, broker.Config{DataDir: dir})
	cl1, err := kgo.NewClient(kgo.SeedBrokers(b1.Addr().String()), kgo.DisableClientMetrics())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"kept", "gone"} {
		if code, msg := alterClientMetrics(t, cl1, n, configOp{set, "metrics", "org.apache.kafka.producer."}, configOp{set, "interval.ms", "1000"}); code != 0 {
			t.Fatalf("%s: %v %s", n, kerr.ErrorForCode(code), msg)
		}
	}
	if code, msg := alterClientMetrics(t, cl1, "gone", configOp{del, "metrics", ""}, configOp{del, "interval.ms", ""}); code != 0 {
		t.Fatalf("delete: %v %s", kerr.ErrorForCode(code), msg)
	}
	cl1.Close()
	if err := testbroker.Close(b1); err != nil {
		t.Fatal(err)
	}

	b2 := testbroker.Start(t, broker.Config{DataDir: dir})
	cl2, err := kgo.NewClient(kgo.SeedBrokers(b2.Addr().String()), kgo.DisableClientMetrics())
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	listed, err := kadm.NewClient(cl2).ListConfigResources(ctx, kadm.ConfigResourceClientMetrics)
	if err != nil || listed.Err != nil || !slices.Equal(listed.Names(), []string{"kept"}) {
		t.Fatalf("after restart: %v %v %v, want just kept", listed.Names(), err, listed.Err)
	}
	if d := describeClientMetrics(t, cl2, "kept"); *d["interval.ms"].Value != "1000" || d["interval.ms"].Source != kmsg.ConfigSourceClientMetricsConfig {
		t.Errorf("kept interval.ms after restart: %+v", d["interval.ms"])
	}
	c := rawconn.Dial(t, b2.Addr().String())
	req := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
	if got := c.Request(req).(*kmsg.GetTelemetrySubscriptionsResponse); got.PushIntervalMillis != 1000 || !slices.Equal(got.RequestedMetrics, []string{"org.apache.kafka.producer."}) {
		t.Errorf("subscription after restart: %+v", got)
	}
}

// TestTelemetryACLs: ListConfigResources and CLIENT_METRICS configs need
// DESCRIBE_CONFIGS / ALTER_CONFIGS on CLUSTER; GetTelemetrySubscriptions
// needs nothing, as in Kafka (docs/security.md api-authorization,
// list-config-resources).
func TestTelemetryACLs(t *testing.T) {
	ab := startACLBroker(t, nil)
	ctx := testCtx(t)
	bob := ab.client(t, "bob", kgo.DisableClientMetrics())
	if listed, err := kadm.NewClient(bob).ListConfigResources(ctx); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("ListConfigResources without DESCRIBE_CONFIGS: %v %v", listed, err)
	}
	if code, _ := alterClientMetrics(t, bob, "s", configOp{set, "metrics", "*"}); code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alter CLIENT_METRICS without ALTER_CONFIGS: %v", kerr.ErrorForCode(code))
	}
	get := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
	if resp, err := get.RequestWith(ctx, bob); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("GetTelemetrySubscriptions with no ACL: %v %+v", err, resp)
	}
	ab.grant(t, kadm.NewACLs().Allow("User:CN=bob").AllowHosts().Clusters().Operations(kadm.OpDescribeConfigs, kadm.OpAlterConfigs))
	if code, msg := alterClientMetrics(t, bob, "s", configOp{set, "metrics", "*"}); code != 0 {
		t.Fatalf("alter CLIENT_METRICS with ALTER_CONFIGS: %v %s", kerr.ErrorForCode(code), msg)
	}
	listed, err := kadm.NewClient(bob).ListConfigResources(ctx, kadm.ConfigResourceClientMetrics)
	if err != nil || !slices.Equal(listed.Names(), []string{"s"}) {
		t.Fatalf("ListConfigResources with DESCRIBE_CONFIGS: %v %v", listed, err)
	}
}
