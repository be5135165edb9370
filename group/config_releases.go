package group

import (
	"strings"

	"github.com/sharebroker/sharebroker/configdef"
)

// GROUP configs by the Kafka release that first defines them
// (group-config-release in docs/share-groups.md §5.6). Kafka's
// GroupConfig.validateNames refuses a name its release does not define, so
// a broker being an older release answers such a name as an unknown one,
// and DescribeConfigs does not list it.

// groupConfigSince is the release that added each GROUP config newer than
// Kafka 4.2; a name not here is in every release this broker can be.
//   - KIP-1240 per-group delivery limit and record locks: Kafka 4.3.
//   - KAFKA-20161 (apache/kafka#21467, merged March 2026 for 4.3):
//     share.renew.acknowledge.enable, default true.
//   - KAFKA-20251 (apache/kafka#21627, "to get these new configs into
//     Apache Kafka 4.3"): {consumer,share,streams}.assignment.interval.ms
//     and .assignor.offload.enable.
var groupConfigSince = map[string]string{
	"share.delivery.count.limit":       "4.3",
	"share.partition.max.record.locks": "4.3",
	"share.renew.acknowledge.enable":   "4.3",
	"consumer.assignment.interval.ms":  "4.3",
	"consumer.assignor.offload.enable": "4.3",
	"share.assignment.interval.ms":     "4.3",
	"share.assignor.offload.enable":    "4.3",
	"streams.assignment.interval.ms":   "4.3",
	"streams.assignor.offload.enable":  "4.3",
}

// releaseHas reports whether release defines the GROUP config name; an
// empty release is the newest. Release names are "4.0" to "4.4", which
// order as strings.
func releaseHas(release, name string) bool {
	since, ok := groupConfigSince[name]
	return !ok || release == "" || strings.Compare(release, since) >= 0
}

// SetRelease makes the store answer as Kafka release (one of
// features.Releases) does: the GROUP configs that release lacks are unknown
// names. Call it before the store is used.
func (s *ConfigStore) SetRelease(release string) { s.release = release }

// knownConfig is findGroupConfig limited to the store's release.
func (s *ConfigStore) knownConfig(name string) (groupConfigDef, bool) {
	d, ok := findGroupConfig(name)
	if !ok || !releaseHas(s.release, name) {
		return groupConfigDef{}, false
	}
	return d, true
}

// assignmentIntervalConfig is <kind>.assignment.interval.ms: INT at least
// 0, within group.<kind>.min/max.assignment.interval.ms, whose Kafka
// defaults are 0 and 15000; the broker default is 1000.
func assignmentIntervalConfig(kind string) groupConfigDef {
	return groupConfigDef{configdef.Def{Name: kind + ".assignment.interval.ms", Scope: configdef.Group, Kind: configdef.Int, Default: "1000",
		Doc: "Kafka 4.3: how long Kafka batches assignment changes. Checked and stored; this broker assigns at once."}, constDef("1000"),
		parseInt(0), inRange(func(*groupBounds) (int64, int64) { return 0, 15000 })}
}

// assignorOffloadConfig is <kind>.assignor.offload.enable: BOOLEAN.
func assignorOffloadConfig(kind string) groupConfigDef {
	return groupConfigDef{configdef.Def{Name: kind + ".assignor.offload.enable", Scope: configdef.Group, Kind: configdef.Bool, Default: "false",
		Doc: "Kafka 4.3: whether Kafka computes assignments on a background thread. Checked and stored; changes nothing here."}, constDef("false"),
		parseBoolean, nil}
}
