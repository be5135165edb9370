package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/group"
)

// GROUP configs (resource type 32, share-groups.md §5.6) exist per group
// ID, whether or not a group by that ID exists. The group package owns
// their names, defaults and validation; this table adds what DescribeConfigs
// and the README need besides: each config's type and meaning.
var groupConfigInfo = map[string]struct {
	kind propKind
	def  string // as the README shows it
	doc  string
}{
	"share.auto.offset.reset":                   {kindString, "`latest`", "Where a share partition starts when the group first reads it: latest, earliest, or by_duration:<ISO-8601 duration>."},
	"share.isolation.level":                     {kindString, "`read_uncommitted`", "read_committed stops acquisition at the last stable offset and never delivers aborted records."},
	"share.record.lock.duration.ms":             {kindInt, "`group.share.record.lock.duration.ms`", "How long an acquired record stays locked to its member; AcquisitionLockTimeoutMs reports it."},
	"share.delivery.count.limit":                {kindInt, "`group.share.delivery.count.limit`", "Delivery attempts after which a released or expired record is archived (Kafka 4.3)."},
	"share.partition.max.record.locks":          {kindInt, "`group.share.partition.max.record.locks`", "Most in-flight records per share partition (Kafka 4.3)."},
	"share.session.timeout.ms":                  {kindInt, "`group.share.session.timeout.ms`", "A member not heard from for this long is fenced; must exceed the heartbeat interval."},
	"share.heartbeat.interval.ms":               {kindInt, "`group.share.heartbeat.interval.ms`", "Heartbeat interval the members are told."},
	"share.renew.acknowledge.enable":            {kindBool, "`true`", "Whether members may RENEW acquisition locks (KIP-1222); false refuses RENEW with INVALID_RECORD_STATE."},
	"consumer.session.timeout.ms":               {kindInt, "`45000`", "Accepted and stored for consumer groups (KIP-848)."},
	"errors.deadletterqueue.topic.name":         {kindString, "`\"\"`", "The share group's dead-letter topic (KIP-1191); blank for none. A name starting with `__` is refused (share-groups.md §10)."},
	"errors.deadletterqueue.copy.record.enable": {kindBool, "`false`", "Whether a dead-letter record carries the source record's key, value and headers, or the context headers alone."},
	"consumer.heartbeat.interval.ms":            {kindInt, "`5000`", "Accepted and stored for consumer groups (KIP-848)."},
	"streams.session.timeout.ms":                {kindInt, "`45000`", "Accepted and stored; streams groups are not served."},
	"streams.heartbeat.interval.ms":             {kindInt, "`5000`", "Accepted and stored; streams groups are not served."},
	"streams.num.standby.replicas":              {kindInt, "`0`", "Accepted and stored; streams groups are not served."},
	"streams.initial.rebalance.delay.ms":        {kindInt, "`3000`", "Accepted and stored; streams groups are not served."},
}

func init() {
	for _, name := range group.GroupConfigNames() {
		info, ok := groupConfigInfo[name]
		if !ok {
			panic("broker: no documentation for group config " + name)
		}
		properties = append(properties, property{name: name, def: info.def, kind: info.kind, scope: scopeGroup, doc: info.doc})
	}
}

// describeGroupConfigs lists every GROUP config of groupID: overrides with
// source GROUP_CONFIG, the rest with the broker-derived default.
func (b *Broker) describeGroupConfigs(groupID string) ([]configEntry, error) {
	if groupID == "" {
		return nil, fmt.Errorf("%w: a GROUP config resource needs a group ID", errInvalidRequest)
	}
	var entries []configEntry
	for _, e := range b.groupConfigs.Describe(groupID) {
		p, ok := lookupProperty(e.Name, scopeGroup)
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
		if err := b.shares.GroupConfigChanged(groupID); err != nil {
			b.log.Error("share partition refused a validated group config", attrGroup, groupID, "err", err)
		}
	}
	return nil
}
