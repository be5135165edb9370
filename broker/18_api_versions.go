package broker

// ApiVersions (key 18), v0-v4 and whatever newer version kmsg decodes.
//
//   - The answer lists the dispatch table cut to the configured Kafka
//     release (release.go, kafka-version-apis): an API is advertised only
//     if a handler serves it and the release has it, with the handler's
//     range capped at the release's maximum.
//   - A request at a version we do not serve (including one newer than any
//     we know) is answered at v0 with UNSUPPORTED_VERSION and the full list,
//     so the client can retry at a version we speak; conn.go handles that
//     before the body is decoded.
//   - v3+ carries the cluster's features (docs/features.md): the release's
//     supported ranges and the finalized levels with their epoch, as they
//     are now, after any UpdateFeatures (features-in-api-versions).
//   - The response header never carries tagged fields (wire.AppendResponse).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/features"
)

const apiVersionsKey = 18

func init() {
	register(apiVersionsKey, 0, (&kmsg.ApiVersionsRequest{}).MaxVersion(), handleAPIVersions)
}

func handleAPIVersions(b *Broker, r *request) (kmsg.Response, error) {
	if refusal := apiVersionsTargetRefusal(b, r); refusal != nil { // api_versions_target.go (KIP-1242)
		return refusal, nil
	}
	r.conn.noteClientSoftware(r.body.(*kmsg.ApiVersionsRequest))
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ApiKeys = b.advertisedAPIs()
	b.addFeatures(resp)
	return resp, nil
}

// addFeatures reports the features (v3+): each the release supports with
// its range, and each finalized at a level above 0 (Kafka lists no
// feature at 0) at that level, with the epoch of the finalized set.
func (b *Broker) addFeatures(resp *kmsg.ApiVersionsResponse) {
	_, epoch := b.features.Finalized()
	resp.FinalizedFeaturesEpoch = epoch
	b.features.Each(func(name string, r features.Range, level int16) {
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = name, r.Min, r.Max
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
		if level > 0 {
			ff := kmsg.NewApiVersionsResponseFinalizedFeature()
			ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = name, level, level
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		}
	})
}

func (b *Broker) unsupportedAPIVersionsResponse() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = b.advertisedAPIs()
	return resp
}

func (b *Broker) advertisedAPIs() []kmsg.ApiVersionsResponseApiKey {
	var keys []kmsg.ApiVersionsResponseApiKey
	for key, r := range b.apiRanges {
		if !r.ok {
			continue
		}
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = int16(key), r.min, r.max
		keys = append(keys, k)
	}
	return keys
}
