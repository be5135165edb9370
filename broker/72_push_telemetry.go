package broker

// PushTelemetry (key 72), v0 (KIP-714; docs/telemetry.md).
//
//   - Checked in Kafka's order (ClientMetricsManager.processPushTelemetryRequest):
//     a reserved instance ID, or any push after a terminating one,
//     INVALID_REQUEST; a push within the push interval (but the first after
//     GetTelemetrySubscriptions, or a terminating one)
//     THROTTLING_QUOTA_EXCEEDED; another subscription ID than the current
//     UNKNOWN_SUBSCRIPTION_ID; an unknown compression type
//     UNSUPPORTED_COMPRESSION_TYPE; a payload above telemetry.max.bytes,
//     compressed or decompressed, TELEMETRY_TOO_LARGE; a payload that
//     cannot be decompressed or decoded INVALID_RECORD.
//   - An accepted payload goes decompressed to Config.Telemetry.Receiver;
//     a terminating one then to Config.Telemetry.Terminated.
//   - No authorization, as in Kafka's KafkaApis.handlePushTelemetryRequest.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/telemetry"
)

func init() { register(72, 0, 0, handlePushTelemetry) }

func handlePushTelemetry(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.PushTelemetryRequest)
	resp := req.ResponseKind().(*kmsg.PushTelemetryResponse)
	err := b.telemetry.Push(r.telemetryClient(req.ClientInstanceID), r.conn, telemetry.Push{
		SubscriptionID: req.SubscriptionID,
		Terminating:    req.Terminating,
		Compression:    req.CompressionType,
		Metrics:        req.Metrics,
	}, b.clock.Now())
	resp.ErrorCode = codeFor(err)
	return resp, nil
}
