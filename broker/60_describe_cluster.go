package broker

// DescribeCluster (key 60), v0-v2.
//
//   - Brokers: every live node, each at the advertised address of its
//     listener of the same name as the one the client connected to; the
//     controller is the first live node (docs/cluster.md
//     metadata-truth). The cluster ID is the configured one.
//   - v1: EndpointType other than 1 (brokers) answers
//     MISMATCHED_ENDPOINT_TYPE: we are a broker endpoint, and we never serve
//     the controller endpoint.
//   - v2: IncludeFencedBrokers also lists the stopped nodes, in node ID
//     order with the others, each with IsFenced true (KIP-1073;
//     docs/cluster.md describe-cluster-fenced). Without it, or before v2,
//     only the live nodes are listed.
//   - IncludeClusterAuthorizedOperations answers the cluster operations the
//     principal may perform (authorized-operations), or 0 without DESCRIBE
//     on CLUSTER. Otherwise the field is INT32_MIN, as Kafka sends.
//   - Anyone may describe the cluster: Kafka checks nothing else
//     (AuthHelper.computeDescribeClusterResponse).

import (
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
)

const endpointTypeBrokers = 1

func init() { register(60, 0, 2, handleDescribeCluster) }

func handleDescribeCluster(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = endpointTypeBrokers
	if req.Version >= 1 && req.EndpointType != endpointTypeBrokers {
		err := fmt.Errorf("%w: the request asked for endpoint type %d, but this is a broker endpoint (type %d)", errMismatchedEndpointType, req.EndpointType, endpointTypeBrokers)
		resp.ErrorCode, resp.ErrorMessage = codeFor(err), errMessage(err)
		return resp, nil
	}
	resp.ClusterID = b.cfg.ClusterID
	resp.ControllerID = b.cluster.LiveNodes()[0]
	fenced := req.Version >= 2 && req.IncludeFencedBrokers
	for _, node := range b.cluster.Nodes() {
		if !node.Up && !fenced {
			continue
		}
		broker := kmsg.NewDescribeClusterResponseBroker()
		e := b.nodeEndpoint(node.ID, r.conn.listenerIndex())
		broker.NodeID, broker.Host, broker.Port = node.ID, e.host, e.port
		broker.IsFenced = !node.Up
		resp.Brokers = append(resp.Brokers, broker)
	}
	resp.ClusterAuthorizedOperations = math.MinInt32
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = 0
		if r.authorizedCluster(acl.OpDescribe) {
			resp.ClusterAuthorizedOperations = r.authorizedOperations(acl.ResourceCluster, acl.ClusterName)
		}
	}
	return resp, nil
}
