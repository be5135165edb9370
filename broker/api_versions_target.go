package broker

// ApiVersions v5 (KIP-1242, Kafka 4.4): the client may name the cluster
// and the node it believes it has reached, so that a connection routed to
// another broker (a stale DNS name, a load balancer, a recycled address)
// is found before any other request goes out (api-versions-target in
// docs/log.md).
//
//   - ClusterID and NodeID come as a pair: both set, or ClusterID null and
//     NodeID -1. One without the other is INVALID_REQUEST, as a 4.4 broker
//     answers (seen by franz-go against 4.4.0-rc1, twmb/franz-go#1449;
//     kmsg's field docs say the same).
//   - Both set and either is not this broker's (the configured cluster ID;
//     the node whose listener the connection came to) is
//     REBOOTSTRAP_REQUIRED: the client drops what it knows and starts again
//     from its bootstrap servers (KafkaApis.clusterIdOrNodeIdIsInvalid,
//     apache/kafka#22187).
//   - Either refusal is Kafka's ApiVersionsRequest.getErrorResponse: the
//     error code alone, no API keys and no features.
//   - Before v5 the fields are not on the wire and nothing is checked.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersionsTargetRefusal is the answer to an ApiVersions that names
// another cluster or node, or names only half of the pair; nil when the
// request may be answered as usual.
func apiVersionsTargetRefusal(b *Broker, r *request) *kmsg.ApiVersionsResponse {
	req := r.body.(*kmsg.ApiVersionsRequest)
	if req.Version < 5 {
		return nil
	}
	namesCluster, namesNode := req.ClusterID != nil, req.NodeID != -1
	var code int16
	switch {
	case namesCluster != namesNode:
		code = kerr.InvalidRequest.Code
	case namesCluster && (*req.ClusterID != b.cfg.ClusterID || req.NodeID != r.conn.node()):
		code = kerr.RebootstrapRequired.Code
	default:
		return nil
	}
	r.conn.log.Debug("refusing ApiVersions: the client expects another cluster or node",
		attrAPIVersion, req.Version, "error_code", code, "expected_node", req.NodeID, "node", r.conn.node())
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ErrorCode = code
	return resp
}
