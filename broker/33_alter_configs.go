package broker

// AlterConfigs (key 33), v0-v2.
//
//   - TOPIC (2) resources: the given configs replace the topic's whole
//     override set (a config left out returns to its default). Each must be
//     a known topic property with a valid value, else INVALID_CONFIG naming
//     it; a null value or a name given twice is INVALID_REQUEST. An unknown
//     topic answers UNKNOWN_TOPIC_OR_PARTITION.
//   - A lowered retention.ms or retention.bytes applies before the answer.
//   - BROKER (4) resources: the ID of the node asked or the empty name
//     (cluster-wide default), else INVALID_REQUEST. Every broker property is static here,
//     so changing any answers INVALID_REQUEST, the code Kafka gives for a
//     config it cannot update dynamically; an empty change succeeds.
//   - CLIENT_METRICS (16) resources: the given configs replace the
//     telemetry subscription's, validated as Kafka's ClientMetricsConfigs
//     validates them; none deletes it (docs/telemetry.md).
//   - Other resource types, and a resource given twice, answer
//     INVALID_REQUEST.
//   - ValidateOnly checks everything and changes nothing.
//   - Authorization (docs/security.md api-authorization): ALTER_CONFIGS on
//     CLUSTER, the topic or the group, else CLUSTER_, TOPIC_ or
//     GROUP_AUTHORIZATION_FAILED, after the duplicate check.

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/storage"
)

func init() { register(33, 0, 2, handleAlterConfigs) }

func handleAlterConfigs(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	dups := duplicateResources(len(req.Resources), func(i int) (kmsg.ConfigResourceType, string) {
		return req.Resources[i].ResourceType, req.Resources[i].ResourceName
	})
	for i, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		var names []string
		for _, c := range rr.Configs {
			names = append(names, c.Name)
		}
		replace := func(map[string]string) (map[string]string, error) {
			next := make(map[string]string, len(rr.Configs))
			for _, c := range rr.Configs {
				if c.Value == nil {
					return nil, fmt.Errorf("%w: null value for config %s", errInvalidRequest, c.Name)
				}
				next[c.Name] = *c.Value
			}
			return next, nil
		}
		err := dups[i]
		if err == nil {
			err = r.configDenied(acl.OpAlterConfigs, rr.ResourceType, rr.ResourceName)
		}
		if err == nil {
			err = b.alterConfigResource(r.conn.node(), rr.ResourceType, rr.ResourceName, names, req.ValidateOnly, replace)
		}
		sr.ErrorCode, sr.ErrorMessage = codeFor(err), errMessage(err)
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

// duplicateResources returns, for each of n resources, an INVALID_REQUEST
// error if its type and name appear more than once in the request.
func duplicateResources(n int, at func(int) (kmsg.ConfigResourceType, string)) []error {
	type key struct {
		typ  kmsg.ConfigResourceType
		name string
	}
	seen := make(map[key]int, n)
	for i := range n {
		t, name := at(i)
		seen[key{t, name}]++
	}
	errs := make([]error, n)
	for i := range n {
		t, name := at(i)
		if seen[key{t, name}] > 1 {
			errs[i] = fmt.Errorf("%w: resource %s %q appears more than once in the request", errInvalidRequest, t, name)
		}
	}
	return errs
}

// alterConfigResource applies one resource of AlterConfigs or
// IncrementalAlterConfigs. names are the configs the request touches; next
// computes the topic's new override set from the current one, under the
// topic's lock, so concurrent alters never lose each other's changes.
func (b *Broker) alterConfigResource(node int32, typ kmsg.ConfigResourceType, name string, names []string, validateOnly bool,
	next func(current map[string]string) (map[string]string, error),
) error {
	for i, n := range names {
		if slices.Contains(names[:i], n) {
			return fmt.Errorf("%w: config %s is given more than once", errInvalidRequest, n)
		}
	}
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if err := storage.ValidateTopicName(name); err != nil {
			return err
		}
		t := b.store.Topic(name)
		if t == nil {
			return fmt.Errorf("%w: %q", storage.ErrUnknownTopic, name)
		}
		err := t.UpdateConfigs(func(current map[string]string) (map[string]string, error) {
			updated, err := next(maps.Clone(current))
			if err != nil {
				return nil, err
			}
			if err := validateTopicConfigs(updated); err != nil {
				return nil, err
			}
			if validateOnly {
				return current, nil
			}
			return updated, nil
		})
		if err != nil || validateOnly {
			return err
		}
		b.log.Info("topic configs altered", attrTopic, name)
		b.applyTopicRetention(t)
		return nil
	case kmsg.ConfigResourceTypeBroker:
		if _, err := b.checkBrokerResource(node, name); err != nil {
			return err
		}
		if len(names) > 0 {
			return fmt.Errorf("%w: cannot update these broker configs dynamically: %s; every broker property of sharebroker is static: set it with --config at start",
				errInvalidRequest, strings.Join(names, ", "))
		}
		return nil
	case kmsg.ConfigResourceTypeGroupConfig:
		return b.alterGroupConfigs(name, validateOnly, next)
	case kmsg.ConfigResourceTypeClientMetrics:
		return b.alterClientMetrics(name, validateOnly, next)
	}
	return fmt.Errorf("%w: resource type %s (%d) is not supported; only TOPIC (2), BROKER (4), CLIENT_METRICS (16) and GROUP (32) are", errInvalidRequest, typ, int8(typ))
}
