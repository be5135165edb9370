package broker

// ApiVersions (key 18), v0-v4 and whatever newer version kmsg decodes.
//
//   - The answer lists exactly the dispatch table: an API is advertised only
//     if a handler serves it, with the range that handler serves.
//   - A request at a version we do not serve (including one newer than any
//     we know) is answered at v0 with UNSUPPORTED_VERSION and the full list,
//     so the client can retry at a version we speak; conn.go handles that
//     before the body is decoded.
//   - The response header never carries tagged fields (wire.AppendResponse).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const apiVersionsKey = 18

func init() {
	register(apiVersionsKey, 0, (&kmsg.ApiVersionsRequest{}).MaxVersion(), handleAPIVersions)
}

func handleAPIVersions(b *Broker, r *request) (kmsg.Response, error) {
	if refusal := apiVersionsTargetRefusal(b, r); refusal != nil { // api_versions_target.go (KIP-1242)
		return refusal, nil
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ApiKeys = advertisedAPIs()
	addFeatures(resp, b.cfg.props.Int32("transaction.version"), b.cfg.props.Int32("share.version"))
	return resp, nil
}

// shareFetchKey is the API whose presence means share groups are served.
const shareFetchKey = 78

// addFeatures reports the features the served APIs implement (v3+):
// transaction.version supported to level 2 and finalized at txnVersion (a
// feature at level 0 is not listed as finalized, as in Kafka), and share
// groups at shareVersion: 1 is Kafka 4.2's, supported 0-1 as 4.2 answers;
// 2 (KIP-1191's dead-letter queues) is supported 0-2, as a broker that has
// it answers. Features are finalized for good, so the epoch never changes.
func addFeatures(resp *kmsg.ApiVersionsResponse, txnVersion, shareVersion int32) {
	resp.FinalizedFeaturesEpoch = 1
	tf := kmsg.NewApiVersionsResponseSupportedFeature()
	tf.Name, tf.MinVersion, tf.MaxVersion = "transaction.version", 0, 2
	resp.SupportedFeatures = append(resp.SupportedFeatures, tf)
	if txnVersion > 0 {
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = "transaction.version", int16(txnVersion), int16(txnVersion)
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	}
	if lookupAPI(shareFetchKey) == nil {
		return
	}
	sf := kmsg.NewApiVersionsResponseSupportedFeature()
	sf.Name, sf.MinVersion, sf.MaxVersion = "share.version", 0, int16(max(1, shareVersion))
	resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	ff := kmsg.NewApiVersionsResponseFinalizedFeature()
	ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = "share.version", int16(shareVersion), int16(shareVersion)
	resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
}

func unsupportedAPIVersionsResponse() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = advertisedAPIs()
	return resp
}

func advertisedAPIs() []kmsg.ApiVersionsResponseApiKey {
	var keys []kmsg.ApiVersionsResponseApiKey
	for _, a := range apis {
		if a == nil {
			continue
		}
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.key, a.minVersion, a.maxVersion
		keys = append(keys, k)
	}
	return keys
}
