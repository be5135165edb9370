package sharebrokertest

import "github.com/sharebroker/sharebroker/telemetry"

// WithTelemetry hands the broker's client telemetry (KIP-714) to h: its
// Receiver gets each accepted PushTelemetry's metrics, decompressed
// (broker.Config.Telemetry, docs/telemetry.md).
func WithTelemetry(h telemetry.Hooks) Option { return func(s *settings) { s.telemetry = h } }
