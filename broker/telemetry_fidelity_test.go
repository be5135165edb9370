package broker_test

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/internal/rawconn"
	"github.com/sharebroker/sharebroker/sharebrokertest"
)

// TestTelemetryPushFromUnknownInstance: a push naming an instance the
// broker does not know (it got its ID from another broker, or this one
// forgot it) is taken when its subscription ID is the one this broker
// computes, and counts as the instance's push: a Get right after it
// answers THROTTLING_QUOTA_EXCEEDED (Kafka's ClientMetricsManagerTest
// testPushTelemetryOnNewServer and
// testGetTelemetrySameClientImmediateRetryAfterPushFail;
// telemetry-instance-id, telemetry-throttle).
func TestTelemetryPushFromUnknownInstance(t *testing.T) {
	first := startTelemetry(t)
	sub := first.get([16]byte{})
	first.c.NC.Close()
	first.p.waitForgotten(t, sub.ClientInstanceID, "when its connection closed")
	b := first.b
	second := &telemetryEnv{b: b, c: rawconn.Dial(t, b.Addr)}
	wantTelemetryCode(t, "push of a forgotten instance", second.push(sub.ClientInstanceID, sub.SubscriptionID, false, 0, nil), nil0)
	wantTelemetryCode(t, "get right after that push", second.get(sub.ClientInstanceID).ErrorCode, kerr.ThrottlingQuotaExceeded)
}

// TestTelemetryMatchEqualsInRegex: a match selector splits at its first
// '=' only, so the regular expression may hold '=' (KAFKA-21041, Kafka's
// ClientMetricsConfigsTest.testParseMatchingPatternsRegexContainingEquals;
// telemetry-match).
func TestTelemetryMatchEqualsInRegex(t *testing.T) {
	e := startTelemetry(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.b.Addr), kgo.DisableClientMetrics())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if code, msg := alterClientMetrics(t, cl, "eq", configOp{set, "match", "client_id=foo=bar"}, configOp{set, "metrics", "org.apache.kafka.eq"}); code != 0 {
		t.Fatalf("match client_id=foo=bar: %v %s", kerr.ErrorForCode(code), msg)
	}
	if v := describeClientMetrics(t, cl, "eq")["match"]; v.Value == nil || *v.Value != "client_id=foo=bar" {
		t.Errorf("described match %v", v.Value)
	}
	// Only the first '=' splits, so an empty expression is one: it
	// matches the empty client ID.
	if code, msg := alterClientMetrics(t, cl, "empty", configOp{set, "match", "client_id="}, configOp{set, "metrics", "org.apache.kafka.x"}); code != 0 {
		t.Errorf("match client_id=: %v %s", kerr.ErrorForCode(code), msg)
	}
	// The selector matches the whole client ID "foo=bar", and a client
	// with another ID does not get the subscription.
	for id, want := range map[string][]string{"foo=bar": {"org.apache.kafka.eq"}, "foo=barx": {}} {
		named, err := kgo.NewClient(kgo.SeedBrokers(e.b.Addr), kgo.DisableClientMetrics(), kgo.ClientID(id))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		got, err := kmsg.NewPtrGetTelemetrySubscriptionsRequest().RequestWith(ctx, named)
		cancel()
		named.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.RequestedMetrics, want) {
			t.Errorf("client %q got %q, want %q", id, got.RequestedMetrics, want)
		}
	}
}

// TestTelemetryDeleteUnsetConfig: DELETE of a CLIENT_METRICS config that is
// not set, even one Kafka does not know, changes nothing and answers no
// error, as Kafka's controller writes no record for it and validates the
// set as it stands (ConfigurationControlManager.incrementalAlterConfigResource;
// telemetry-subscription-configs).
func TestTelemetryDeleteUnsetConfig(t *testing.T) {
	e := startTelemetry(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.b.Addr), kgo.DisableClientMetrics())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if code, msg := alterClientMetrics(t, cl, "sub", configOp{set, "metrics", "org.apache.kafka.a"}); code != 0 {
		t.Fatalf("set: %v %s", kerr.ErrorForCode(code), msg)
	}
	if code, msg := alterClientMetrics(t, cl, "sub", configOp{del, "color", ""}, configOp{del, "interval.ms", ""}); code != 0 || msg != "" {
		t.Errorf("delete of unset configs: %v %q, want no error", kerr.ErrorForCode(code), msg)
	}
	if v := describeClientMetrics(t, cl, "sub")["metrics"]; v.Value == nil || *v.Value != "org.apache.kafka.a" {
		t.Errorf("metrics after the deletes: %v", v.Value)
	}
}

// TestTelemetryAnswerFields: the answers of APIs 71, 72 and 74 are not
// throttled, and an error answer of GetTelemetrySubscriptions carries its
// code and every other field at its zero value, as Kafka's
// getErrorResponse builds it (telemetry-answer-fields).
func TestTelemetryAnswerFields(t *testing.T) {
	e := startTelemetry(t)
	sub := e.get([16]byte{})
	if sub.ThrottleMillis != 0 {
		t.Errorf("get: throttle %d ms", sub.ThrottleMillis)
	}
	throttled := e.get(sub.ClientInstanceID)
	if throttled.ErrorCode != kerr.ThrottlingQuotaExceeded.Code || throttled.ThrottleMillis != 0 || throttled.ClientInstanceID != ([16]byte{}) ||
		throttled.SubscriptionID != 0 || len(throttled.AcceptedCompressionTypes) != 0 || throttled.PushIntervalMillis != 0 ||
		throttled.TelemetryMaxBytes != 0 || throttled.DeltaTemporality || len(throttled.RequestedMetrics) != 0 {
		t.Errorf("throttled get answer %+v, want only the error code", throttled)
	}
	push := kmsg.NewPtrPushTelemetryRequest()
	push.ClientInstanceID, push.SubscriptionID = sub.ClientInstanceID, sub.SubscriptionID
	if r := e.c.Request(push).(*kmsg.PushTelemetryResponse); r.ErrorCode != 0 || r.ThrottleMillis != 0 {
		t.Errorf("push: %v, throttle %d ms", kerr.ErrorForCode(r.ErrorCode), r.ThrottleMillis)
	}
	if r := e.c.Request(push).(*kmsg.PushTelemetryResponse); r.ErrorCode != kerr.ThrottlingQuotaExceeded.Code || r.ThrottleMillis != 0 {
		t.Errorf("second push: %v, throttle %d ms", kerr.ErrorForCode(r.ErrorCode), r.ThrottleMillis)
	}
	if r := e.c.Request(kmsg.NewPtrListConfigResourcesRequest()).(*kmsg.ListConfigResourcesResponse); r.ErrorCode != 0 || r.ThrottleMillis != 0 {
		t.Errorf("list config resources: %v, throttle %d ms", kerr.ErrorForCode(r.ErrorCode), r.ThrottleMillis)
	}
}

// TestTelemetryMatchIPv6SourceAddress: client_source_address is matched
// against the address as Java writes it (InetAddress.getHostAddress, in
// Kafka's ClientMetricsInstanceMetadata): ::1 is 0:0:0:0:0:0:0:1, so a
// selector written for Kafka matches here too (telemetry-match).
func TestTelemetryMatchIPv6SourceAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	ln.Close()
	e := startTelemetry(t, sharebrokertest.WithProperty("listeners", "PLAINTEXT://[::1]:0"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.b.Addr), kgo.DisableClientMetrics())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for name, addr := range map[string]string{"java": "0:0:0:0:0:0:0:1", "go": "::1"} {
		if code, msg := alterClientMetrics(t, cl, name, configOp{set, "match", "client_source_address=" + addr}, configOp{set, "metrics", "org.apache.kafka." + name}); code != 0 {
			t.Fatalf("%s: %v %s", name, kerr.ErrorForCode(code), msg)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := kmsg.NewPtrGetTelemetrySubscriptionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.RequestedMetrics, []string{"org.apache.kafka.java"}) {
		t.Errorf("client at ::1 got %q, want only the subscription matching 0:0:0:0:0:0:0:1", got.RequestedMetrics)
	}
}

// TestTelemetryDescribeFields: DescribeConfigs v4 of a CLIENT_METRICS
// resource, set or not, lists metrics, interval.ms and match with
// ConfigType LIST, INT and LIST, neither read-only nor sensitive, and no
// synonyms unless asked for (Kafka's ConfigHelper.createClientMetricsConfigEntry
// and configResponseType; telemetry-subscription-configs).
func TestTelemetryDescribeFields(t *testing.T) {
	e := startTelemetry(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.b.Addr), kgo.DisableClientMetrics())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if code, msg := alterClientMetrics(t, cl, "set", configOp{set, "interval.ms", "1000"}); code != 0 {
		t.Fatalf("set: %v %s", kerr.ErrorForCode(code), msg)
	}
	wantType := map[string]kmsg.ConfigType{"metrics": kmsg.ConfigTypeList, "interval.ms": kmsg.ConfigTypeInt, "match": kmsg.ConfigTypeList}
	for _, name := range []string{"set", "unset"} {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version = 4
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeClientMetrics, name
		req.Resources = append(req.Resources, rr)
		resp := e.c.Request(req).(*kmsg.DescribeConfigsResponse)
		r := resp.Resources[0]
		if r.ErrorCode != 0 || resp.ThrottleMillis != 0 {
			t.Fatalf("%s: %v", name, kerr.ErrorForCode(r.ErrorCode))
		}
		var names []string
		for _, c := range r.Configs {
			names = append(names, c.Name)
			if c.ConfigType != wantType[c.Name] || c.ReadOnly || c.IsSensitive || len(c.ConfigSynonyms) != 0 {
				t.Errorf("%s %s: type %v read-only %v sensitive %v synonyms %v", name, c.Name, c.ConfigType, c.ReadOnly, c.IsSensitive, c.ConfigSynonyms)
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"interval.ms", "match", "metrics"}) {
			t.Errorf("%s: configs %q", name, names)
		}
	}
	// The empty name is refused with ConfigHelper's text and nothing else.
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = 4
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType = kmsg.ConfigResourceTypeClientMetrics
	req.Resources = append(req.Resources, rr)
	r := e.c.Request(req).(*kmsg.DescribeConfigsResponse).Resources[0]
	if r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil || *r.ErrorMessage != "Client metrics subscription name must not be empty" || len(r.Configs) != 0 {
		t.Errorf("empty name: %v %v %d configs", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, len(r.Configs))
	}
}

// TestTelemetryTwoPushesAfterSubscriptionChange: after the subscriptions
// change, two pushes with the old subscription ID answer
// UNKNOWN_SUBSCRIPTION_ID and then THROTTLING_QUOTA_EXCEEDED, since the
// first one, though refused, counts as the remade instance's push (the
// sequential form of Kafka's ClientMetricsManagerTest
// testPushTelemetryConcurrentRequestAfterSubscriptionUpdate;
// telemetry-subscription-change, telemetry-push-checks).
func TestTelemetryTwoPushesAfterSubscriptionChange(t *testing.T) {
	e := startTelemetry(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.b.Addr), kgo.DisableClientMetrics())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	sub := e.get([16]byte{})
	if code, msg := alterClientMetrics(t, cl, "s", configOp{set, "metrics", "org.apache.kafka.x"}); code != 0 {
		t.Fatalf("set: %v %s", kerr.ErrorForCode(code), msg)
	}
	wantTelemetryCode(t, "first push with the old ID", e.push(sub.ClientInstanceID, sub.SubscriptionID, false, 0, []byte("a")), kerr.UnknownSubscriptionID)
	wantTelemetryCode(t, "second push with the old ID", e.push(sub.ClientInstanceID, sub.SubscriptionID, false, 0, []byte("a")), kerr.ThrottlingQuotaExceeded)
}
