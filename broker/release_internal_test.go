package broker

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sharebroker/sharebroker/features"
)

// TestReleaseMinVersions: kafka-version-apis. releaseMinVersions holds,
// for each release and API served, the minimum version of kversion's
// table when above 0. kversion does not export minimums, so each is found
// by comparing the release's table cut to the one API with a table built
// from an ApiVersions answer at each candidate minimum.
func TestReleaseMinVersions(t *testing.T) {
	want := map[string]map[int16]int16{}
	for _, name := range features.Releases {
		want[name] = map[int16]int16{}
		var keys []int16
		kversionOf(name).EachMaxKeyVersion(func(k, _ int16) { keys = append(keys, k) })
		for _, a := range apis {
			if a == nil {
				continue
			}
			only := kversionOf(name)
			rmax, ok := only.LookupMaxKeyVersion(a.key)
			if !ok {
				continue
			}
			for _, k := range keys {
				if k != a.key {
					only.SetMaxKeyVersion(k, -1)
				}
			}
			found := false
			for m := int16(0); m <= rmax && !found; m++ {
				r := kmsg.NewPtrApiVersionsResponse()
				r.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: a.key, MinVersion: m, MaxVersion: rmax}}
				if only.Equal(kversion.FromApiVersionsResponse(r)) {
					found = true
					if m > 0 {
						want[name][a.key] = m
					}
				}
			}
			if !found {
				t.Fatalf("Kafka %s: no minimum of %s found", name, kmsg.NameForKey(a.key))
			}
		}
	}
	for _, name := range features.Releases {
		if !maps.Equal(want[name], releaseMinVersions[name]) {
			var sb strings.Builder
			for _, n := range features.Releases {
				fmt.Fprintf(&sb, "\t%q: {", n)
				for i, k := range slices.Sorted(maps.Keys(want[n])) {
					if i > 0 {
						sb.WriteString(", ")
					}
					fmt.Fprintf(&sb, "%d: %d", k, want[n][k])
				}
				sb.WriteString("},\n")
			}
			t.Fatalf("releaseMinVersions differs from kversion; want:\n%s", sb.String())
		}
	}
}
