package broker

// DescribeConfigs (key 32), v1-v4.
//
//   - TOPIC (2) resources: every topic property of the property table, with
//     its effective value and source: DYNAMIC_TOPIC_CONFIG for the topic's
//     override, else its broker synonym's STATIC_BROKER_CONFIG (set with
//     --config) or DEFAULT_CONFIG. Topic configs are never read-only.
//   - BROKER (4) resources: named by the ID of the node asked (each node
//     describes itself: describe-configs-broker-id), every broker property,
//     STATIC_BROKER_CONFIG or DEFAULT_CONFIG, all read-only: this broker has
//     no dynamic configuration. The empty name asks for the cluster-wide
//     dynamic defaults, of which there are none, so it answers no configs
//     (as Kafka with none set). Any other name answers INVALID_REQUEST, as
//     Kafka does for another broker's ID or a non-numeric name.
//   - CLIENT_METRICS (16) resources: the telemetry subscription's three
//     configs, CLIENT_METRICS_CONFIG where set, DEFAULT_CONFIG otherwise
//     (client_metrics_configs.go, docs/telemetry.md).
//   - Other resource types answer INVALID_REQUEST; an unknown topic
//     UNKNOWN_TOPIC_OR_PARTITION, an invalid topic name
//     INVALID_TOPIC_EXCEPTION.
//   - ConfigNames null or empty means all, as in Kafka's ConfigHelper;
//     named configs we do not know are left out, as Kafka does.
//   - ErrorMessage is "" on success and for an unknown topic (Kafka sets
//     none there and the field's default is ""), a message for the other
//     errors (answers-as-kafka).
//   - IncludeSynonyms lists, in order of precedence, every place that can
//     supply the value (the override, the static broker setting, the
//     default) under its own property name.
//   - v3+: ConfigType always; Documentation when IncludeDocumentation.
//   - Nothing is sensitive.
//   - Authorization (docs/security.md api-authorization): DESCRIBE_CONFIGS
//     on CLUSTER, the topic or the group, else CLUSTER_, TOPIC_ or
//     GROUP_AUTHORIZATION_FAILED with Kafka's message, after the others.

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/storage"
)

func init() { register(32, 1, 4, handleDescribeConfigs) }

func handleDescribeConfigs(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	// Refused resources follow the others, with Kafka's message and no
	// configs (ConfigHelper.handleDescribeConfigsRequest).
	var refused []kmsg.DescribeConfigsResponseResource
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		if err := r.configDenied(acl.OpDescribeConfigs, rr.ResourceType, rr.ResourceName); err != nil {
			sr.ErrorCode, sr.ErrorMessage = codeFor(err), errMessage(err)
			sr.Configs = []kmsg.DescribeConfigsResponseResourceConfig{}
			refused = append(refused, sr)
			continue
		}
		entries, err := b.describeResource(r.conn.node(), rr.ResourceType, rr.ResourceName)
		sr.ErrorMessage = kmsg.StringPtr("")
		if err != nil {
			sr.ErrorCode = codeFor(err)
			if !errors.Is(err, storage.ErrUnknownTopic) {
				sr.ErrorMessage = errMessage(err)
			}
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		for _, e := range entries {
			if len(rr.ConfigNames) > 0 && !slices.Contains(rr.ConfigNames, e.prop.Name) {
				continue
			}
			sr.Configs = append(sr.Configs, describedConfig(req, e))
		}
		resp.Resources = append(resp.Resources, sr)
	}
	resp.Resources = append(resp.Resources, refused...)
	return resp, nil
}

func (b *Broker) describeResource(node int32, typ kmsg.ConfigResourceType, name string) ([]configEntry, error) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if err := storage.ValidateTopicName(name); err != nil {
			return nil, err
		}
		t := b.store.Topic(name)
		if t == nil {
			return nil, fmt.Errorf("%w: %q", storage.ErrUnknownTopic, name)
		}
		return b.topicConfigEntries(t.Configs()), nil
	case kmsg.ConfigResourceTypeBroker:
		clusterDefault, err := b.checkBrokerResource(node, name)
		if err != nil || clusterDefault {
			return nil, err
		}
		return b.brokerConfigEntries(), nil
	case kmsg.ConfigResourceTypeGroupConfig:
		return b.describeGroupConfigs(name)
	case kmsg.ConfigResourceTypeClientMetrics:
		return b.describeClientMetrics(name)
	}
	return nil, fmt.Errorf("%w: resource type %s (%d) is not supported; only TOPIC (2), BROKER (4), CLIENT_METRICS (16) and GROUP (32) are", errInvalidRequest, typ, int8(typ))
}

// checkBrokerResource accepts a BROKER resource name sent to node: node's
// own ID, or the empty name of the cluster-wide defaults (clusterDefault
// true). Anything else, another node's ID included, is INVALID_REQUEST, as
// in Kafka's ConfigHelper.describeConfigs and
// ConfigAdminManager.validateResourceNameIsCurrentNodeId
// (docs/cluster.md describe-configs-broker-id).
func (b *Broker) checkBrokerResource(node int32, name string) (clusterDefault bool, err error) {
	if name == "" {
		return true, nil
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return false, fmt.Errorf("%w: broker resource name %q is not a broker ID", errInvalidRequest, name)
	}
	if id != int64(node) {
		return false, fmt.Errorf("%w: unexpected broker ID %d; this broker is %d (or use the empty name for cluster-wide defaults)", errInvalidRequest, id, node)
	}
	return false, nil
}

func describedConfig(req *kmsg.DescribeConfigsRequest, e configEntry) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name = e.prop.Name
	c.Value = &e.value
	c.ReadOnly = e.readOnly
	c.IsDefault = e.source == kmsg.ConfigSourceDefaultConfig
	c.Source = e.source
	c.ConfigType = configType(e.prop.Kind)
	if req.IncludeSynonyms {
		for _, s := range e.synonyms {
			syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			syn.Name, syn.Value, syn.Source = s.name, &s.value, s.source
			c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
		}
	}
	if req.IncludeDocumentation {
		c.Documentation = &e.prop.Doc
	}
	return c
}
