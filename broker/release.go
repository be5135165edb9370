package broker

// The Kafka release the broker is (--kafka-version, the property
// sharebroker.kafka.version; docs/features.md): kversion's tables read
// here, at the edge, because kversion imports kmsg and package features
// must not. What ApiVersions advertises and what conn.go and the SASL gate
// accept both come from b.apiRanges, so they never disagree
// (kafka-version-apis).

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sharebroker/sharebroker/features"
)

// kafkaVersionProp is the property --kafka-version sets.
const kafkaVersionProp = "sharebroker.kafka.version"

// KafkaVersions are the releases --kafka-version accepts, oldest first.
var KafkaVersions = features.Releases

// KafkaVersionList is KafkaVersions for a message.
func KafkaVersionList() string { return features.ReleaseList() }

// ValidKafkaVersion reports whether v is one of KafkaVersions.
func ValidKafkaVersion(v string) bool { return features.ValidRelease(v) }

// KafkaVersionProperty is the property --kafka-version sets.
const KafkaVersionProperty = kafkaVersionProp

// kversionOf is kversion's table of release name, one of KafkaVersions.
func kversionOf(name string) *kversion.Versions {
	switch name {
	case "4.0":
		return kversion.V4_0_0()
	case "4.1":
		return kversion.V4_1_0()
	case "4.2":
		return kversion.V4_2_0()
	case "4.3":
		return kversion.V4_3_0()
	default:
		return kversion.V4_4_0()
	}
}

// versionRange is the versions of one API the broker serves as its
// release; ok is false when it serves none.
type versionRange struct {
	min, max int16
	ok       bool
}

// servedAPIs is the dispatch table cut to release name, whose kversion
// table is vs: each handler's range with its maximum lowered to the
// release's and its minimum raised to it, and no API the release does not
// have (kafka-version-apis).
func servedAPIs(name string, vs *kversion.Versions) [maxAPIKey + 1]versionRange {
	var out [maxAPIKey + 1]versionRange
	for _, a := range apis {
		if a == nil {
			continue
		}
		rmax, ok := vs.LookupMaxKeyVersion(a.key)
		if !ok {
			continue
		}
		lo, hi := max(a.minVersion, releaseMinVersions[name][a.key]), min(a.maxVersion, rmax)
		out[a.key] = versionRange{min: lo, max: hi, ok: lo <= hi}
	}
	return out
}

// releaseFeatures is kversion's feature table of vs, without the features
// this broker does not serve (features-not-served).
func releaseFeatures(name string, vs *kversion.Versions) features.Release {
	rel := features.Release{Name: name, Supported: map[string]features.Range{}, Defaults: map[string]int16{}}
	vs.EachSupportedFeature(func(f string, lo, hi int16) { rel.Supported[f] = features.Range{Min: lo, Max: hi} })
	vs.EachFinalizedFeature(func(f string, level int16) { rel.Defaults[f] = level })
	return features.Served(rel)
}

// newFeatures makes the cluster's features for the configured release: its
// defaults, each overridden by share.version or transaction.version when
// the properties give them. The data directory may replace them at Start.
func (b *Broker) newFeatures(vs *kversion.Versions) error {
	name := b.cfg.props[kafkaVersionProp]
	rel := releaseFeatures(name, vs)
	overrides := map[string]int16{}
	for _, f := range []string{features.ShareVersion, features.TransactionVersion} {
		if v, ok := b.cfg.Props[f]; ok {
			n, err := strconv.ParseInt(v, 10, 16)
			if err != nil {
				return fmt.Errorf("%s %q: %v", f, v, err) // validated already; kept for safety
			}
			overrides[f] = int16(n)
		}
	}
	levels, err := features.Initial(rel, overrides)
	if err != nil {
		return fmt.Errorf("%w (--kafka-version %s)", err, name)
	}
	// A new cluster's epoch: Kafka's is the offset of the metadata log,
	// past 0 once formatted; sharebroker answered 1 before it had
	// UpdateFeatures, and keeps that.
	b.features, err = features.New(rel, levels, 1, func() int32 { return b.cluster.LiveNodes()[0] })
	return err
}

// served returns the versions of API key the broker serves.
func (b *Broker) served(key int16) versionRange {
	if key < 0 || key > maxAPIKey {
		return versionRange{}
	}
	return b.apiRanges[key]
}

// servesVersion reports whether the broker serves version v of key.
func (b *Broker) servesVersion(key, v int16) bool {
	r := b.served(key)
	return r.ok && v >= r.min && v <= r.max
}
