package broker

// IncrementalAlterConfigs (key 44), v0-v1.
//
//   - TOPIC (2) resources: each config names an operation on the topic's
//     overrides. SET (0) sets one; DELETE (1) removes one, so the default
//     applies again (deleting an unset one is fine); APPEND (2) and
//     SUBTRACT (3) add items to or remove items from a list property such
//     as cleanup.policy, starting from its effective value.
//   - APPEND or SUBTRACT of a non-list property, an unknown property or an
//     invalid resulting value answers INVALID_CONFIG naming it; an unknown
//     operation, a null value where one is needed, or a name given twice
//     INVALID_REQUEST. An unknown topic answers UNKNOWN_TOPIC_OR_PARTITION.
//   - The operations of one resource apply together or not at all; a
//     lowered retention.ms or retention.bytes applies before the answer.
//   - CLIENT_METRICS (16) resources: the same operations on the telemetry
//     subscription's configs (metrics and match are lists); deleting every
//     config deletes the subscription (docs/telemetry.md).
//   - BROKER (4) resources and everything else: as AlterConfigs.
//   - ValidateOnly checks everything and changes nothing.
//   - Authorization (docs/security.md api-authorization): ALTER_CONFIGS on
//     CLUSTER, the topic or the group, else CLUSTER_, TOPIC_ or
//     GROUP_AUTHORIZATION_FAILED, after the duplicate check.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/brokerconfig"
	"github.com/sharebroker/sharebroker/configdef"
)

func init() { register(44, 0, 1, handleIncrementalAlterConfigs) }

func handleIncrementalAlterConfigs(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	dups := duplicateResources(len(req.Resources), func(i int) (kmsg.ConfigResourceType, string) {
		return req.Resources[i].ResourceType, req.Resources[i].ResourceName
	})
	for i, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		var names []string
		for _, c := range rr.Configs {
			names = append(names, c.Name)
		}
		apply := func(current map[string]string) (map[string]string, error) {
			for _, c := range rr.Configs {
				if err := b.applyConfigOp(rr.ResourceType, current, c); err != nil {
					return nil, err
				}
			}
			return current, nil
		}
		err := dups[i]
		if err == nil {
			err = r.configDenied(acl.OpAlterConfigs, rr.ResourceType, rr.ResourceName)
		}
		if err == nil {
			err = b.alterConfigResource(r.conn.node(), rr.ResourceType, rr.ResourceName, names, req.ValidateOnly, apply)
		}
		sr.ErrorCode, sr.ErrorMessage = codeFor(err), errMessage(err)
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

// applyConfigOp applies one operation to a topic's or a group's overrides
// in place. The caller validates the resulting set. Group configs are all
// scalars, so APPEND and SUBTRACT of one is INVALID_CONFIG, as Kafka answers
// for any scalar config.
func (b *Broker) applyConfigOp(typ kmsg.ConfigResourceType, overrides map[string]string, c kmsg.IncrementalAlterConfigsRequestResourceConfig) error {
	scope, kind := configdef.Topic, "topic"
	if typ == kmsg.ConfigResourceTypeGroupConfig {
		scope, kind = configdef.Group, "group"
	}
	p, known := brokerconfig.Lookup(c.Name, scope)
	if typ == kmsg.ConfigResourceTypeClientMetrics {
		kind = "client metrics"
		p, known = clientMetricsProperty(c.Name)
		if err := clientMetricsOpRefused(c, p, known); err != nil || c.Op == kmsg.IncrementalAlterConfigOpDelete {
			delete(overrides, c.Name)
			return err
		}
	}
	switch c.Op {
	case kmsg.IncrementalAlterConfigOpSet:
		if c.Value == nil {
			return fmt.Errorf("%w: null value for SET of config %s", errInvalidRequest, c.Name)
		}
		overrides[c.Name] = *c.Value
		return nil
	case kmsg.IncrementalAlterConfigOpDelete:
		if !known {
			return fmt.Errorf("%w: unknown %s config name: %s", errInvalidConfig, kind, c.Name)
		}
		delete(overrides, c.Name)
		return nil
	case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
		if !known {
			return fmt.Errorf("%w: unknown %s config name: %s", errInvalidConfig, kind, c.Name)
		}
		if p.Kind != configdef.List {
			return fmt.Errorf("%w: %s is not a list, so it cannot be appended to or subtracted from", errInvalidConfig, c.Name)
		}
		if c.Value == nil {
			return fmt.Errorf("%w: null value for %s of config %s", errInvalidRequest, c.Op, c.Name)
		}
		current, ok := overrides[c.Name]
		if !ok {
			current = b.cfg.props[p.Synonym]
		}
		items := configdef.SplitList(current)
		for _, item := range configdef.SplitList(*c.Value) {
			if c.Op == kmsg.IncrementalAlterConfigOpAppend && !slices.Contains(items, item) {
				items = append(items, item)
			}
			if c.Op == kmsg.IncrementalAlterConfigOpSubtract {
				items = slices.DeleteFunc(items, func(s string) bool { return s == item })
			}
		}
		overrides[c.Name] = strings.Join(items, ",")
		return nil
	}
	return fmt.Errorf("%w: unknown operation %d for config %s", errInvalidRequest, int8(c.Op), c.Name)
}
