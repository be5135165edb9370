package broker

// ListConfigResources (key 74), v0-v1: v0 is KIP-714's
// ListClientMetricsResources, v1 KIP-1142's listing of every config
// resource (docs/telemetry.md list-config-resources).
//
//   - v0 lists the CLIENT_METRICS subscriptions.
//   - v1 lists the resource types asked for, all of TOPIC (2), BROKER (4),
//     BROKER_LOGGER (8), CLIENT_METRICS (16) and GROUP (32) when none is
//     (Kafka's ListConfigResourcesRequest.supportedResourceTypes), in
//     Kafka's order GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC,
//     names sorted within a type: the GROUP configs set, the subscriptions,
//     the IDs of the nodes that are up (as loggers and as brokers), the
//     topics. A type outside those answers UNSUPPORTED_VERSION and nothing
//     else (KafkaApis.handleListConfigResources).
//   - Authorization: DESCRIBE_CONFIGS on CLUSTER, else
//     CLUSTER_AUTHORIZATION_FAILED and nothing else.

import (
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
)

func init() { register(74, 0, 1, handleListConfigResources) }

// listedConfigTypes are the types v1 lists, in the order it lists them.
var listedConfigTypes = []kmsg.ConfigResourceType{
	kmsg.ConfigResourceTypeGroupConfig, kmsg.ConfigResourceTypeClientMetrics,
	kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeTopic,
}

func handleListConfigResources(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ListConfigResourcesRequest)
	resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	if !r.authorizedCluster(acl.OpDescribeConfigs) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	wanted := func(t kmsg.ConfigResourceType) bool {
		if req.Version == 0 {
			return t == kmsg.ConfigResourceTypeClientMetrics
		}
		return len(req.ResourceTypes) == 0 || slices.Contains(req.ResourceTypes, int8(t))
	}
	for _, t := range req.ResourceTypes {
		if !slices.Contains(listedConfigTypes, kmsg.ConfigResourceType(t)) {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return resp, nil
		}
	}
	add := func(t kmsg.ConfigResourceType, names []string) {
		for _, name := range names {
			cr := kmsg.NewListConfigResourcesResponseConfigResource()
			cr.Name, cr.Type = name, int8(t)
			resp.ConfigResources = append(resp.ConfigResources, cr)
		}
	}
	var nodes []string
	for _, n := range b.cluster.Nodes() {
		if n.Up {
			nodes = append(nodes, strconv.Itoa(int(n.ID)))
		}
	}
	for _, t := range listedConfigTypes {
		if !wanted(t) {
			continue
		}
		switch t {
		case kmsg.ConfigResourceTypeGroupConfig:
			add(t, b.groupConfigs.IDs())
		case kmsg.ConfigResourceTypeClientMetrics:
			add(t, b.telemetry.Names())
		case kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeBroker:
			add(t, nodes)
		case kmsg.ConfigResourceTypeTopic:
			add(t, b.store.TopicNames())
		}
	}
	return resp, nil
}
