package broker

// GetTelemetrySubscriptions (key 71), v0 (KIP-714; docs/telemetry.md).
//
//   - The zero client instance ID asks for a new one; any other is kept
//     (telemetry-instance-id). The answer carries the subscription the
//     client matches: its ID, metrics, push interval, the accepted
//     compression types, telemetry.max.bytes and DeltaTemporality true.
//   - A second request within the push interval answers
//     THROTTLING_QUOTA_EXCEEDED, unless the last push failed with
//     UNKNOWN_SUBSCRIPTION_ID or UNSUPPORTED_COMPRESSION_TYPE
//     (telemetry-throttle).
//   - An error answer carries only the error code, as Kafka's
//     GetTelemetrySubscriptionsRequest.getErrorResponse.
//   - No authorization, as in Kafka's KafkaApis.handleGetTelemetrySubscriptionsRequest.
//   - Package telemetry decides all of it.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(71, 0, 0, handleGetTelemetrySubscriptions) }

func handleGetTelemetrySubscriptions(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.GetTelemetrySubscriptionsRequest)
	resp := req.ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
	sub, err := b.telemetry.Subscribe(r.telemetryClient(req.ClientInstanceID), r.conn, b.clock.Now())
	if err != nil {
		resp.ErrorCode = codeFor(err)
		return resp, nil
	}
	resp.ClientInstanceID = sub.InstanceID
	resp.SubscriptionID = sub.SubscriptionID
	resp.AcceptedCompressionTypes = sub.AcceptedCompression
	resp.PushIntervalMillis = int32(sub.PushInterval.Milliseconds())
	resp.TelemetryMaxBytes = sub.MaxBytes
	resp.DeltaTemporality = sub.DeltaTemporality
	resp.RequestedMetrics = sub.Metrics
	if resp.RequestedMetrics == nil {
		resp.RequestedMetrics = []string{}
	}
	return resp, nil
}
