package brokerconfig

import (
	"time"

	"github.com/sharebroker/sharebroker/configdef"
)

// Property names of client telemetry (KIP-714; package telemetry,
// docs/telemetry.md).
const (
	PropTelemetryMaxBytes        = "telemetry.max.bytes"
	PropTelemetryDefaultEnable   = "sharebroker.telemetry.default.subscription.enable"
	PropTelemetryDefaultInterval = "sharebroker.telemetry.default.interval.ms"
)

// telemetryProperties: Kafka's telemetry.max.bytes (MetricConfigs) and
// sharebroker's default subscription.
var telemetryProperties = []configdef.Def{
	{Name: PropTelemetryMaxBytes, Default: "1048576", Kind: configdef.Int, Scope: configdef.Broker, Min: 1, Max: configdef.Int32Max,
		Doc: "Largest metrics payload a PushTelemetry may carry, compressed and decompressed; a larger one answers TELEMETRY_TOO_LARGE (telemetry-max-bytes). Told to clients in GetTelemetrySubscriptions."},
	{Name: PropTelemetryDefaultEnable, Default: "true", Kind: configdef.Bool, Scope: configdef.Broker,
		Doc: "sharebroker's own, not Kafka's: while no CLIENT_METRICS subscription exists, every client is subscribed to all its metrics (the prefix `org.apache.kafka.`, which franz-go reads as all where it takes `*` literally) at sharebroker.telemetry.default.interval.ms, so client telemetry arrives with no set-up (telemetry-default-subscription). false: as Kafka, no metrics until a subscription is made."},
	{Name: PropTelemetryDefaultInterval, Default: "30000", Kind: configdef.Int, Scope: configdef.Broker, Min: 100, Max: 3600000,
		Doc: "sharebroker's own, not Kafka's: the push interval of the default subscription, within the bounds Kafka sets interval.ms (100 to 3600000)."},
}

// Telemetry is what the telemetry properties set.
type Telemetry struct {
	MaxBytes int
	// DefaultInterval is the default subscription's push interval; zero
	// when the default subscription is off.
	DefaultInterval time.Duration
}

// Telemetry reads the telemetry properties.
func (bp Props) Telemetry() Telemetry {
	t := Telemetry{MaxBytes: int(bp.Int32(PropTelemetryMaxBytes))}
	if bp.Bool(PropTelemetryDefaultEnable) {
		t.DefaultInterval = time.Duration(bp.Int64(PropTelemetryDefaultInterval)) * time.Millisecond
	}
	return t
}
