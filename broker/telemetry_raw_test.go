package broker_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/internal/rawconn"
	"github.com/sharebroker/sharebroker/sharebrokertest"
	"github.com/sharebroker/sharebroker/telemetry"
)

// telemetryEnv is a broker on the manual clock with a test Receiver, and a
// bare connection to it.
type telemetryEnv struct {
	b *sharebrokertest.Broker
	p *pushes
	c *rawconn.Conn
}

func startTelemetry(t *testing.T, opts ...sharebrokertest.Option) *telemetryEnv {
	t.Helper()
	p := newPushes()
	b := sharebrokertest.Start(t, append([]sharebrokertest.Option{sharebrokertest.WithTelemetry(p.hooks())}, opts...)...)
	return &telemetryEnv{b: b, p: p, c: rawconn.Dial(t, b.Addr)}
}

func (e *telemetryEnv) get(id [16]byte) *kmsg.GetTelemetrySubscriptionsResponse {
	req := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
	req.ClientInstanceID = id
	return e.c.Request(req).(*kmsg.GetTelemetrySubscriptionsResponse)
}

func (e *telemetryEnv) push(id [16]byte, sub int32, terminating bool, codec int8, payload []byte) int16 {
	req := kmsg.NewPtrPushTelemetryRequest()
	req.ClientInstanceID, req.SubscriptionID, req.Terminating, req.CompressionType, req.Metrics = id, sub, terminating, codec, payload
	return e.c.Request(req).(*kmsg.PushTelemetryResponse).ErrorCode
}

func wantTelemetryCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	if got != want.Code {
		t.Errorf("%s: %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

// TestTelemetryGetSubscription: the zero instance ID gets a new one, the
// default subscription's org.apache.kafka. at its interval, Kafka's compression types in
// its order, telemetry.max.bytes and delta temporality
// (telemetry-instance-id, telemetry-default-subscription,
// telemetry-compression, telemetry-max-bytes).
func TestTelemetryGetSubscription(t *testing.T) {
	e := startTelemetry(t, sharebrokertest.WithProperty("telemetry.max.bytes", "2048"))
	resp := e.get([16]byte{})
	wantTelemetryCode(t, "get", resp.ErrorCode, nil0)
	if resp.ClientInstanceID == ([16]byte{}) {
		t.Fatal("no client instance ID assigned")
	}
	if resp.PushIntervalMillis != 30000 || resp.TelemetryMaxBytes != 2048 || !resp.DeltaTemporality ||
		!slices.Equal(resp.RequestedMetrics, []string{"org.apache.kafka."}) || !slices.Equal(resp.AcceptedCompressionTypes, []int8{4, 3, 1, 2}) {
		t.Errorf("answer %+v", resp)
	}
	// A client that names its instance ID keeps it.
	var own [16]byte
	own[0], own[15] = 7, 9
	if got := e.get(own); got.ErrorCode != 0 || got.ClientInstanceID != own {
		t.Errorf("own instance ID: %v, %x", kerr.ErrorForCode(got.ErrorCode), got.ClientInstanceID)
	}
}

var nil0 *kerr.Error = &kerr.Error{Code: 0}

// TestTelemetryThrottle: on the manual clock, a second Get within the
// push interval and a second push within it answer
// THROTTLING_QUOTA_EXCEEDED; the first push after a Get may come early;
// once the interval passes both are taken (telemetry-throttle,
// ClientMetricsInstance.maybeUpdate*RequestTimestamp).
func TestTelemetryThrottle(t *testing.T) {
	e := startTelemetry(t, sharebrokertest.WithProperty("sharebroker.telemetry.default.interval.ms", "1000"))
	sub := e.get([16]byte{})
	id := sub.ClientInstanceID
	wantTelemetryCode(t, "second get at once", e.get(id).ErrorCode, kerr.ThrottlingQuotaExceeded)
	wantTelemetryCode(t, "first push at once", e.push(id, sub.SubscriptionID, false, 0, otlpGauge(t, "a")), nil0)
	wantTelemetryCode(t, "second push at once", e.push(id, sub.SubscriptionID, false, 0, []byte("b")), kerr.ThrottlingQuotaExceeded)
	e.b.Advance(999 * time.Millisecond)
	wantTelemetryCode(t, "push 1ms early", e.push(id, sub.SubscriptionID, false, 0, []byte("c")), kerr.ThrottlingQuotaExceeded)
	e.b.Advance(time.Millisecond)
	wantTelemetryCode(t, "push after the interval", e.push(id, sub.SubscriptionID, false, 0, otlpGauge(t, "d")), nil0)
	e.b.Advance(time.Second)
	wantTelemetryCode(t, "get after the interval", e.get(id).ErrorCode, nil0)
	if got := e.p.wait(t, 2, 5*time.Second); !bytes.Equal(got.payload, otlpGauge(t, "d")) || got.interval != time.Second {
		t.Errorf("second payload %q at %v, want d at 1s", got.payload, got.interval)
	}
}

// TestTelemetryPushErrors: each refusal of PushTelemetry, in Kafka's order
// (ClientMetricsManager.validatePushRequest; telemetry-push-checks).
func TestTelemetryPushErrors(t *testing.T) {
	e := startTelemetry(t, sharebrokertest.WithProperty("telemetry.max.bytes", "64"),
		sharebrokertest.WithProperty("sharebroker.telemetry.default.interval.ms", "1000"))
	var one [16]byte
	one[15] = 1
	wantTelemetryCode(t, "zero instance ID", e.push([16]byte{}, 0, false, 0, []byte("x")), kerr.InvalidRequest)
	wantTelemetryCode(t, "reserved instance ID", e.push(one, 0, false, 0, []byte("x")), kerr.InvalidRequest)

	sub := e.get([16]byte{})
	id := sub.ClientInstanceID
	wantTelemetryCode(t, "unknown subscription ID", e.push(id, sub.SubscriptionID+1, false, 0, []byte("x")), kerr.UnknownSubscriptionID)
	// After UNKNOWN_SUBSCRIPTION_ID a Get within the interval is answered,
	// but it does not restart the interval: the next push waits for it,
	// as in Kafka (maybeUpdateGetRequestTimestamp moves nothing early).
	again := e.get(id)
	wantTelemetryCode(t, "get after unknown subscription", again.ErrorCode, nil0)
	wantTelemetryCode(t, "push right after that get", e.push(id, again.SubscriptionID, false, 0, []byte("x")), kerr.ThrottlingQuotaExceeded)
	e.b.Advance(time.Second)
	wantTelemetryCode(t, "unknown compression type", e.push(id, again.SubscriptionID, false, 5, []byte("x")), kerr.UnsupportedCompressionType)
	again = e.get(id)
	wantTelemetryCode(t, "get after unsupported compression", again.ErrorCode, nil0)
	e.b.Advance(time.Second)
	wantTelemetryCode(t, "too large (telemetry-max-bytes)", e.push(id, again.SubscriptionID, false, 0, bytes.Repeat([]byte("x"), 65)), kerr.TelemetryTooLarge)
	wantTelemetryCode(t, "get after too large, within the interval", e.get(id).ErrorCode, kerr.ThrottlingQuotaExceeded)

	e2 := startTelemetry(t, sharebrokertest.WithProperty("telemetry.max.bytes", "64"))
	s2 := e2.get([16]byte{})
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(bytes.Repeat([]byte("y"), 1000))
	zw.Close()
	if gz.Len() > 64 {
		t.Fatalf("gzip of 1000 bytes is %d bytes", gz.Len())
	}
	wantTelemetryCode(t, "too large once decompressed", e2.push(s2.ClientInstanceID, s2.SubscriptionID, false, 1, gz.Bytes()), kerr.TelemetryTooLarge)

	e3 := startTelemetry(t)
	s3 := e3.get([16]byte{})
	wantTelemetryCode(t, "gzip that is not gzip", e3.push(s3.ClientInstanceID, s3.SubscriptionID, false, 1, []byte("not gzip")), kerr.InvalidRecord)
}

// TestTelemetryReceiverError: a payload the Receiver cannot decode answers
// INVALID_RECORD (telemetry-receiver).
func TestTelemetryReceiverError(t *testing.T) {
	b := sharebrokertest.Start(t, sharebrokertest.WithTelemetry(telemetry.Hooks{
		Receiver: func(telemetry.Client, []byte, time.Duration, time.Time) error { return errors.New("not OTLP") },
	}))
	e := &telemetryEnv{b: b, c: rawconn.Dial(t, b.Addr)}
	sub := e.get([16]byte{})
	wantTelemetryCode(t, "undecodable payload", e.push(sub.ClientInstanceID, sub.SubscriptionID, false, 0, []byte("x")), kerr.InvalidRecord)
}

// TestTelemetryTerminating: a terminating push is taken within the
// interval and tells Terminated; any push after it answers INVALID_REQUEST
// (telemetry-terminating).
func TestTelemetryTerminating(t *testing.T) {
	e := startTelemetry(t)
	sub := e.get([16]byte{})
	id := sub.ClientInstanceID
	wantTelemetryCode(t, "first push", e.push(id, sub.SubscriptionID, false, 0, otlpGauge(t, "a")), nil0)
	wantTelemetryCode(t, "terminating push within the interval", e.push(id, sub.SubscriptionID, true, 0, otlpGauge(t, "b")), nil0)
	wantTelemetryCode(t, "push after terminating", e.push(id, sub.SubscriptionID, false, 0, []byte("c")), kerr.InvalidRequest)
	// Kafka records each push's flag whatever its outcome, so the refused
	// push cleared it: once the interval passes, pushes are taken again.
	e.b.Advance(30 * time.Second)
	wantTelemetryCode(t, "push after the refused one, an interval later", e.push(id, sub.SubscriptionID, false, 0, otlpGauge(t, "d")), nil0)
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	if len(e.p.got) != 3 || len(e.p.terminated) != 1 || e.p.terminated[0].InstanceID != id {
		t.Errorf("pushes %d, terminated %+v; want 3 and the one instance", len(e.p.got), e.p.terminated)
	}
}

// TestTelemetryDefaultOff: with the default subscription off and no
// CLIENT_METRICS resource, a client is subscribed to nothing at Kafka's
// 5 minutes (telemetry-default-subscription).
func TestTelemetryDefaultOff(t *testing.T) {
	e := startTelemetry(t, sharebrokertest.WithProperty("sharebroker.telemetry.default.subscription.enable", "false"))
	resp := e.get([16]byte{})
	if resp.ErrorCode != 0 || len(resp.RequestedMetrics) != 0 || resp.PushIntervalMillis != 300000 {
		t.Errorf("answer %+v, want no metrics at 300000 ms", resp)
	}
}

// TestTelemetryExpiry: an instance is kept max(60 s, 3 intervals) after
// its last request, on the broker clock, then forgotten: a push naming it
// is taken as a new instance's (telemetry-instance-cache).
func TestTelemetryExpiry(t *testing.T) {
	e := startTelemetry(t, sharebrokertest.WithProperty("sharebroker.telemetry.default.interval.ms", "1000"))
	sub := e.get([16]byte{})
	e.b.Advance(59 * time.Second)
	e.get([16]byte{}) // another instance: a request that would notice an expiry
	select {
	case c := <-e.p.forgotten:
		t.Fatalf("instance %x forgotten after 59s", c.InstanceID)
	default:
	}
	e.b.Advance(time.Second)
	// Expiry is noticed at the next telemetry request, any client's.
	other := rawconn.Dial(t, e.b.Addr)
	other.Request(kmsg.NewPtrGetTelemetrySubscriptionsRequest())
	e.p.waitForgotten(t, sub.ClientInstanceID, "60s after its last request")
}

// TestTelemetryForgottenOnClose: closing the connection that made an
// instance forgets it, as Kafka's ClientMetricsManager does on disconnect
// (telemetry-instance-cache).
func TestTelemetryForgottenOnClose(t *testing.T) {
	e := startTelemetry(t)
	sub := e.get([16]byte{})
	e.c.NC.Close()
	e.p.waitForgotten(t, sub.ClientInstanceID, "when its connection closed")
}
