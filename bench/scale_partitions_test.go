package bench_test

import (
	"fmt"
	"testing"
)

// BenchmarkScaleSharePartitions sweeps the partitions of the one topic two
// kgo share consumers of one group read (axis PARTITIONS, default 16, 256,
// 1024, 4096): 200k preloaded 100-byte records spread round robin over N
// partitions, every record accepted, each point on a fresh broker of each
// peer in a process of its own, with the peers of
// BenchmarkScaleShareMembers. A ShareFetch carries at most kgo's 500
// records, so as N grows each fetch finds records on a few of the
// partitions of its share session; what the broker does for the others is
// what this sweep shows (docs/share-groups.md, share-fetch-ready-set). A
// scale sweep (skipUnlessScale); metrics those of
// BenchmarkScaleShareMembers.
func BenchmarkScaleSharePartitions(b *testing.B) {
	skipUnlessScale(b)
	for _, n := range scalePoints(b, "PARTITIONS", 16, 256, 1024, 4096) {
		topic := shareTopic{name: "scale-partitions", partitions: n}
		for _, p := range scaleSharePeers {
			b.Run(fmt.Sprintf("partitions=%d/%s", n, p.name), func(b *testing.B) {
				var m scaleShareMetrics
				for range b.N {
					m.add(runScaleShare(b, p, topic, scaleShareConsumers, shareRecords, nil))
				}
				m.report(b)
			})
		}
	}
}

// scaleShareConsumers is the partitions sweep's consumers, as in the issue
// that set the workload.
const scaleShareConsumers = 2
