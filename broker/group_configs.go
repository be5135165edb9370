package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/brokerconfig"
	"github.com/sharebroker/sharebroker/configdef"
)

// GROUP configs (resource type 32, share-groups.md §5.6) exist per group
// ID, whether or not a group by that ID exists. The group package declares
// them (names, types, meaning) and owns their defaults and validation;
// package brokerconfig gathers the declarations into the property table.

// describeGroupConfigs lists every GROUP config of groupID: overrides with
// source GROUP_CONFIG, the rest with the broker-derived default.
func (b *Broker) describeGroupConfigs(groupID string) ([]configEntry, error) {
	if groupID == "" {
		return nil, fmt.Errorf("%w: a GROUP config resource needs a group ID", errInvalidRequest)
	}
	var entries []configEntry
	for _, e := range b.groupConfigs.Describe(groupID) {
		p, ok := brokerconfig.Lookup(e.Name, configdef.Group)
		if !ok {
			continue
		}
		source := kmsg.ConfigSourceGroupConfig
		if e.IsDefault {
			source = kmsg.ConfigSourceDefaultConfig
		}
		entries = append(entries, configEntry{prop: p, value: e.Value, source: source})
	}
	return entries, nil
}

// alterGroupConfigs computes groupID's new overrides with next and stores
// them, validated as a whole by the group package. With validateOnly
// nothing changes.
func (b *Broker) alterGroupConfigs(groupID string, validateOnly bool,
	next func(current map[string]string) (map[string]string, error),
) error {
	if groupID == "" {
		return fmt.Errorf("%w: a GROUP config resource needs a group ID", errInvalidRequest)
	}
	current := make(map[string]string)
	for _, e := range b.groupConfigs.Describe(groupID) {
		if !e.IsDefault {
			current[e.Name] = e.Value
		}
	}
	updated, err := next(current)
	if err != nil {
		return err
	}
	if err := b.groupConfigs.Replace(groupID, updated, validateOnly); err != nil {
		return err
	}
	if !validateOnly {
		b.log.Info("group configs altered", attrGroup, groupID)
		if err := b.shareServing.GroupConfigChanged(groupID); err != nil {
			b.log.Error("share partition refused a validated group config", attrGroup, groupID, "err", err)
		}
	}
	return nil
}
