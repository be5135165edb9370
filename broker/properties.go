package broker

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A property is one Kafka configuration name the broker honours, with
// Kafka's default. Broker properties are set at start (--config key=value);
// topic properties are set per topic and fall back to their broker synonym.
// This table is the one place that knows names, defaults and bounds; the
// README's configuration reference is generated from it.
type property struct {
	name     string
	def      string
	kind     propKind
	scope    propScope
	synonym  string   // topic scope: the broker property that supplies the default
	enum     []string // kindEnum: the accepted values; kindList: the accepted items
	min, max int64    // kindInt, kindLong: inclusive bounds
	// kindDouble: inclusive bounds.
	minFloat, maxFloat float64
	doc                string
}

type propKind int8

const (
	kindInt propKind = iota + 1
	kindLong
	kindBool
	kindString
	kindEnum
	kindList   // comma-separated items, each one of enum
	kindDouble // a decimal number within [minFloat, maxFloat]
)

type propScope int8

const (
	scopeBroker propScope = iota + 1
	scopeTopic
	scopeGroup // GROUP resources; validated by the group package
)

func (k propKind) String() string {
	switch k {
	case kindInt:
		return "INT"
	case kindLong:
		return "LONG"
	case kindBool:
		return "BOOLEAN"
	case kindEnum, kindString:
		return "STRING"
	case kindList:
		return "LIST"
	case kindDouble:
		return "DOUBLE"
	}
	return "UNKNOWN"
}

// configType is the kind as DescribeConfigs (v3+) reports it.
func (k propKind) configType() kmsg.ConfigType {
	switch k {
	case kindInt:
		return kmsg.ConfigTypeInt
	case kindLong:
		return kmsg.ConfigTypeLong
	case kindBool:
		return kmsg.ConfigTypeBoolean
	case kindEnum, kindString:
		return kmsg.ConfigTypeString
	case kindList:
		return kmsg.ConfigTypeList
	case kindDouble:
		return kmsg.ConfigTypeDouble
	}
	return 0
}

const (
	int32Max = 1<<31 - 1
	int64Max = 1<<63 - 1
)

// properties lists every honoured property. Order is the README's order.
var properties = []property{
	// Broker.
	{name: "auto.create.topics.enable", def: "true", kind: kindBool, scope: scopeBroker,
		doc: "Create a topic when Metadata asks for an unknown one (and the client allows it)."},
	{name: "num.partitions", def: "1", kind: kindInt, scope: scopeBroker, min: 1, max: int32Max,
		doc: "Partitions of an auto-created topic, and of CreateTopics asking for -1."},
	{name: "default.replication.factor", def: "1", kind: kindInt, scope: scopeBroker, min: 1, max: 1,
		doc: "Replication factor reported for new topics; a single node holds one replica."},
	{name: "delete.topic.enable", def: "true", kind: kindBool, scope: scopeBroker,
		doc: "Allow DeleteTopics."},
	{name: "socket.request.max.bytes", def: "104857600", kind: kindInt, scope: scopeBroker, min: 1, max: int32Max,
		doc: "Largest request frame accepted; a larger one closes the connection before anything is allocated."},
	{name: "message.max.bytes", def: "1048588", kind: kindInt, scope: scopeBroker, min: 0, max: int32Max,
		doc: "Largest record batch accepted; default of the topic property max.message.bytes."},
	{name: "fetch.max.bytes", def: "57671680", kind: kindInt, scope: scopeBroker, min: 1024, max: int32Max,
		doc: "Upper bound of the bytes one Fetch response returns, whatever the request asks."},
	{name: "log.retention.ms", def: "604800000", kind: kindLong, scope: scopeBroker, min: -1, max: int64Max,
		doc: "Default of retention.ms (7 days); -1 keeps records forever."},
	{name: "log.retention.bytes", def: "-1", kind: kindLong, scope: scopeBroker, min: -1, max: int64Max,
		doc: "Default of retention.bytes per partition; -1 is unlimited."},
	{name: "log.retention.check.interval.ms", def: "300000", kind: kindLong, scope: scopeBroker, min: 1, max: int64Max,
		doc: "How often retention is applied to every partition."},
	{name: "transaction.version", def: "2", kind: kindInt, scope: scopeBroker, min: 0, max: 2,
		doc: "The finalized level of the transaction.version feature, as `kafka-storage format --feature` sets it (Kafka 4.x formats new clusters at 2). At 2, clients may use KIP-890's transactions: Produce v12+ and TxnOffsetCommit v5+ add their partition or group themselves, and EndTxn v5 raises the epoch with every transaction. Below 2 those versions keep the older rules."},
	{name: "share.version", def: "1", kind: kindInt, scope: scopeBroker, min: 1, max: 2,
		doc: "The finalized level of the share.version feature. 1 is Kafka 4.2's share groups; 2 adds KIP-1191's dead-letter queues (share-groups.md §10): below 2 no dead-letter record is written, whatever the group configs say."},
	{name: "errors.deadletterqueue.topic.name.prefix", def: "dlq.", kind: kindString, scope: scopeBroker,
		doc: "Prefix every share group's dead-letter topic must have (KIP-1191); empty allows any name. Checked when a dead letter is written."},
	{name: "errors.deadletterqueue.auto.create.topics.enable", def: "false", kind: kindBool, scope: scopeBroker,
		doc: "Create a share group's missing dead-letter topic on its first dead letter (KIP-1191), with num.partitions partitions, opted in, CreateTime; false refuses the write."},
	{name: "transaction.max.timeout.ms", def: "900000", kind: kindInt, scope: scopeBroker, min: 1, max: int32Max,
		doc: "Largest TransactionTimeoutMs InitProducerId accepts; a larger one is INVALID_TRANSACTION_TIMEOUT."},
	{name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", def: "10000", kind: kindInt, scope: scopeBroker, min: 1, max: int32Max,
		doc: "How often, on the broker clock, transactions open past their timeout are aborted (with the epoch raised)."},
	{name: "transactional.id.expiration.ms", def: "604800000", kind: kindInt, scope: scopeBroker, min: 1, max: int32Max,
		doc: "How long a transactional ID may stay idle before it is forgotten."},
	{name: "log.message.timestamp.type", def: "CreateTime", kind: kindEnum, scope: scopeBroker, enum: []string{"CreateTime", "LogAppendTime"},
		doc: "Default of message.timestamp.type."},
	{name: "log.cleanup.policy", def: "delete", kind: kindList, scope: scopeBroker, enum: cleanupPolicies,
		doc: "Default of cleanup.policy. Compaction is not performed; the value is stored and reported."},
	{name: "log.segment.bytes", def: "1073741824", kind: kindInt, scope: scopeBroker, min: 1048576, max: int32Max,
		doc: "Default of segment.bytes: with a data directory, the size at which a partition starts a new segment file; without one, stored and reported."},
	{name: "min.insync.replicas", def: "1", kind: kindInt, scope: scopeBroker, min: 1, max: int32Max,
		doc: "Default of the topic property; an acks=-1 produce needs this many nodes up (capped at --nodes); a single node is always in sync."},
	{name: "compression.type", def: "producer", kind: kindEnum, scope: scopeBroker, enum: []string{"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"},
		doc: "Default of the topic property. Batches are stored as produced."},
	{name: "log.roll.ms", def: "604800000", kind: kindLong, scope: scopeBroker, min: 1, max: int64Max,
		doc: "Default of segment.ms (7 days, what Kafka derives from log.roll.hours). Stored and reported; logs are not segmented."},
	{name: "log.roll.jitter.ms", def: "0", kind: kindLong, scope: scopeBroker, min: 0, max: int64Max,
		doc: "Default of segment.jitter.ms. Stored and reported; logs are not segmented."},
	{name: "log.index.size.max.bytes", def: "10485760", kind: kindInt, scope: scopeBroker, min: 4, max: int32Max,
		doc: "Default of segment.index.bytes. Stored and reported; there are no index files."},
	{name: "log.index.interval.bytes", def: "4096", kind: kindInt, scope: scopeBroker, min: 0, max: int32Max,
		doc: "Default of index.interval.bytes. Stored and reported; there are no index files."},
	{name: "log.cleaner.min.compaction.lag.ms", def: "0", kind: kindLong, scope: scopeBroker, min: 0, max: int64Max,
		doc: "Default of min.compaction.lag.ms. Stored and reported; compaction is not performed."},
	{name: "log.cleaner.max.compaction.lag.ms", def: "9223372036854775807", kind: kindLong, scope: scopeBroker, min: 1, max: int64Max,
		doc: "Default of max.compaction.lag.ms. Stored and reported; compaction is not performed."},
	{name: "log.cleaner.delete.retention.ms", def: "86400000", kind: kindLong, scope: scopeBroker, min: 0, max: int64Max,
		doc: "Default of delete.retention.ms (1 day). Stored and reported; compaction is not performed."},
	{name: "log.cleaner.min.cleanable.ratio", def: "0.5", kind: kindDouble, scope: scopeBroker, minFloat: 0, maxFloat: 1,
		doc: "Default of min.cleanable.dirty.ratio. Stored and reported; compaction is not performed."},
	{name: "unclean.leader.election.enable", def: "false", kind: kindBool, scope: scopeBroker,
		doc: "Default of the topic property. Stored and reported; a single node has no other replica to elect."},
	{name: "log.message.timestamp.before.max.ms", def: "9223372036854775807", kind: kindLong, scope: scopeBroker, min: 0, max: int64Max,
		doc: "Default of message.timestamp.before.max.ms. Stored and reported; produce does not check it."},
	{name: "log.message.timestamp.after.max.ms", def: "3600000", kind: kindLong, scope: scopeBroker, min: 0, max: int64Max,
		doc: "Default of message.timestamp.after.max.ms (1 hour, Kafka 4's default). Stored and reported; produce does not check it."},
	{name: "log.flush.interval.messages", def: "9223372036854775807", kind: kindLong, scope: scopeBroker, min: 1, max: int64Max,
		doc: "Default of flush.messages. With a data directory, a partition's segment is fsynced once this many records were appended since its last fsync (docs/durability.md: flush-as-kafka); the default never fsyncs, as Kafka's."},
	{name: "log.flush.interval.ms", def: "9223372036854775807", kind: kindLong, scope: scopeBroker, min: 0, max: int64Max,
		doc: "Default of flush.ms. With a data directory, an append fsyncs its segment when this long has passed since the last fsync; the default never fsyncs, as Kafka's."},
	{name: "share.coordinator.snapshot.update.records.per.snapshot", def: "500", kind: kindInt, scope: scopeBroker, min: 0, max: 500,
		doc: "With a data directory, the metadata log is rewritten as a snapshot in the background once this many records (and at least as many as its last snapshot holds) were appended to it; Kafka's share coordinator writes a share partition's snapshot after this many updates (docs/durability.md: meta-compaction). 0 is as 1."},
	{name: "log.dirs", def: "", kind: kindString, scope: scopeBroker,
		doc: "The data directory (as --data-dir and SHAREBROKER_DATA_DIR): topics, records and log start offsets survive restarts and SIGKILL (docs/durability.md). One directory; a list of more is an error. Empty keeps everything in memory."},
	{name: "log.segment.delete.delay.ms", def: "60000", kind: kindLong, scope: scopeBroker, min: 0, max: int64Max,
		doc: "Default of file.delete.delay.ms. Stored and reported; deleted records are dropped at once."},
	{name: "log.preallocate", def: "false", kind: kindBool, scope: scopeBroker,
		doc: "Default of preallocate. Stored and reported; logs are kept in memory."},
	{name: "group.min.session.timeout.ms", def: "6000", kind: kindInt, scope: scopeBroker, min: 0, max: int32Max,
		doc: "Shortest session timeout a classic group member may ask for; shorter answers INVALID_SESSION_TIMEOUT."},
	{name: "group.max.session.timeout.ms", def: "1800000", kind: kindInt, scope: scopeBroker, min: 0, max: int32Max,
		doc: "Longest session timeout a classic group member may ask for; longer answers INVALID_SESSION_TIMEOUT."},
	{name: "group.initial.rebalance.delay.ms", def: "0", kind: kindInt, scope: scopeBroker, min: 0, max: int32Max,
		doc: "How long the first rebalance of an empty classic group waits for more members, extended by each joiner up to the rebalance timeout. Kafka's default is 3000; 0 here, so a test's consumers get their first records at once (test-defaults)."},
	{name: "group.max.size", def: "2147483647", kind: kindInt, scope: scopeBroker, min: 1, max: int32Max,
		doc: "Most members of one classic group; one more answers GROUP_MAX_SIZE_REACHED."},
	{name: "group.consumer.session.timeout.ms", def: "45000", kind: kindInt, scope: scopeBroker, min: 1, max: int32Max,
		doc: "Member session timeout of KIP-848 consumer groups (consumer.session.timeout.ms overrides it per group)."},
	{name: "group.consumer.min.session.timeout.ms", def: "45000", kind: kindInt, scope: scopeBroker, min: 1, max: int32Max,
		doc: "Lowest session timeout of a KIP-848 consumer group."},
	{name: "group.consumer.max.session.timeout.ms", def: "60000", kind: kindInt, scope: scopeBroker, min: 1, max: int32Max,
		doc: "Highest session timeout of a KIP-848 consumer group."},
	{name: "group.consumer.heartbeat.interval.ms", def: "5000", kind: kindInt, scope: scopeBroker, min: 1, max: int32Max,
		doc: "Heartbeat interval KIP-848 consumer group members are told (consumer.heartbeat.interval.ms overrides it per group)."},
	{name: "group.consumer.min.heartbeat.interval.ms", def: "5000", kind: kindInt, scope: scopeBroker, min: 1, max: int32Max,
		doc: "Lowest heartbeat interval of a KIP-848 consumer group."},
	{name: "group.consumer.max.heartbeat.interval.ms", def: "15000", kind: kindInt, scope: scopeBroker, min: 1, max: int32Max,
		doc: "Highest heartbeat interval of a KIP-848 consumer group."},
	{name: "group.consumer.max.size", def: "2147483647", kind: kindInt, scope: scopeBroker, min: 1, max: int32Max,
		doc: "Most members of one KIP-848 consumer group; one more answers GROUP_MAX_SIZE_REACHED."},
	{name: "group.consumer.assignors", def: "uniform,range", kind: kindList, scope: scopeBroker, enum: []string{"uniform", "range"},
		doc: "Server-side assignors of KIP-848 consumer groups; the first is the default."},
	{name: "offsets.retention.minutes", def: "10080", kind: kindInt, scope: scopeBroker, min: 1, max: int32Max,
		doc: "Committed offsets of a group without members expire this long after it became empty (7 days)."},
	{name: "offsets.retention.check.interval.ms", def: "600000", kind: kindLong, scope: scopeBroker, min: 1, max: int64Max,
		doc: "How often committed offsets are checked for expiry."},
	{name: "sasl.enabled.mechanisms", def: "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", kind: kindList, scope: scopeBroker, enum: []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"},
		doc: "Mechanisms SASL_PLAINTEXT and SASL_SSL listeners offer. Kafka's default is GSSAPI, which is not built; OAUTHBEARER takes unsecured tokens (alg none) whose `sub` is the user (sasl-mechanisms)."},
	{name: "connections.max.reauth.ms", def: "0", kind: kindLong, scope: scopeBroker, min: 0, max: int64Max,
		doc: "Session lifetime of a SASL connection (KIP-368): a client must re-authenticate within it or its next request closes the connection. 0 turns it off (an OAUTHBEARER token's expiry still applies)."},
	{name: "sasl.server.max.receive.size", def: "524288", kind: kindInt, scope: scopeBroker, min: 1, max: int32Max,
		doc: "Largest frame a SASL connection may send before it has authenticated; a larger one closes it."},
	{name: "offset.metadata.max.bytes", def: "4096", kind: kindInt, scope: scopeBroker, min: 0, max: int32Max,
		doc: "Longest metadata string an offset commit may carry; longer answers OFFSET_METADATA_TOO_LARGE."},
	{name: "authorizer.class.name", def: "", kind: kindString, scope: scopeBroker,
		doc: "`org.apache.kafka.metadata.authorizer.StandardAuthorizer` turns ACLs on: every request is checked as Kafka checks it (docs/security.md, ACLs). Empty (the default) allows everything, and the ACL APIs answer SECURITY_DISABLED. Any other class name stops the broker at start."},
	{name: "super.users", def: "", kind: kindString, scope: scopeBroker,
		doc: "Principals allowed everything whatever the ACLs say, separated by semicolons (`User:admin;User:CN=ops`)."},
	{name: "allow.everyone.if.no.acl.found", def: "false", kind: kindBool, scope: scopeBroker,
		doc: "With ACLs on, allow an operation on a resource no ACL applies to at all."},

	// Topic.
	{name: "retention.ms", kind: kindLong, scope: scopeTopic, synonym: "log.retention.ms", min: -1, max: int64Max,
		doc: "Batches whose newest timestamp is older than this are deleted."},
	{name: "retention.bytes", kind: kindLong, scope: scopeTopic, synonym: "log.retention.bytes", min: -1, max: int64Max,
		doc: "Oldest batches are deleted while a partition holds more than this."},
	{name: "max.message.bytes", kind: kindInt, scope: scopeTopic, synonym: "message.max.bytes", min: 0, max: int32Max,
		doc: "Largest record batch accepted for the topic."},
	{name: "message.timestamp.type", kind: kindEnum, scope: scopeTopic, synonym: "log.message.timestamp.type", enum: []string{"CreateTime", "LogAppendTime"},
		doc: "LogAppendTime stamps each batch with the broker's clock on append."},
	{name: "cleanup.policy", kind: kindList, scope: scopeTopic, synonym: "log.cleanup.policy", enum: cleanupPolicies,
		doc: "Stored and reported; compaction is not performed."},
	{name: "segment.bytes", kind: kindInt, scope: scopeTopic, synonym: "log.segment.bytes", min: 1048576, max: int32Max,
		doc: "With a data directory, the size at which a partition starts a new segment file; without one, stored and reported."},
	{name: "min.insync.replicas", kind: kindInt, scope: scopeTopic, synonym: "min.insync.replicas", min: 1, max: int32Max,
		doc: "An acks=-1 produce needs this many nodes up (capped at --nodes), else NOT_ENOUGH_REPLICAS; a single node is always in sync."},
	{name: "compression.type", kind: kindEnum, scope: scopeTopic, synonym: "compression.type", enum: []string{"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"},
		doc: "Stored and reported; batches are stored as produced."},
	{name: "segment.ms", kind: kindLong, scope: scopeTopic, synonym: "log.roll.ms", min: 1, max: int64Max,
		doc: "Stored and reported; logs are not segmented."},
	{name: "segment.jitter.ms", kind: kindLong, scope: scopeTopic, synonym: "log.roll.jitter.ms", min: 0, max: int64Max,
		doc: "Stored and reported; logs are not segmented."},
	{name: "segment.index.bytes", kind: kindInt, scope: scopeTopic, synonym: "log.index.size.max.bytes", min: 4, max: int32Max,
		doc: "Stored and reported; there are no index files."},
	{name: "index.interval.bytes", kind: kindInt, scope: scopeTopic, synonym: "log.index.interval.bytes", min: 0, max: int32Max,
		doc: "Stored and reported; there are no index files."},
	{name: "min.compaction.lag.ms", kind: kindLong, scope: scopeTopic, synonym: "log.cleaner.min.compaction.lag.ms", min: 0, max: int64Max,
		doc: "Stored and reported; compaction is not performed."},
	{name: "max.compaction.lag.ms", kind: kindLong, scope: scopeTopic, synonym: "log.cleaner.max.compaction.lag.ms", min: 1, max: int64Max,
		doc: "Stored and reported; compaction is not performed."},
	{name: "delete.retention.ms", kind: kindLong, scope: scopeTopic, synonym: "log.cleaner.delete.retention.ms", min: 0, max: int64Max,
		doc: "Stored and reported; compaction is not performed, so there are no tombstones to expire."},
	{name: "min.cleanable.dirty.ratio", kind: kindDouble, scope: scopeTopic, synonym: "log.cleaner.min.cleanable.ratio", minFloat: 0, maxFloat: 1,
		doc: "Stored and reported; compaction is not performed."},
	{name: "unclean.leader.election.enable", kind: kindBool, scope: scopeTopic, synonym: "unclean.leader.election.enable",
		doc: "Stored and reported; a single node has no other replica to elect."},
	{name: "message.timestamp.before.max.ms", kind: kindLong, scope: scopeTopic, synonym: "log.message.timestamp.before.max.ms", min: 0, max: int64Max,
		doc: "Stored and reported; produce does not check it."},
	{name: "message.timestamp.after.max.ms", kind: kindLong, scope: scopeTopic, synonym: "log.message.timestamp.after.max.ms", min: 0, max: int64Max,
		doc: "Stored and reported; produce does not check it."},
	{name: "flush.messages", kind: kindLong, scope: scopeTopic, synonym: "log.flush.interval.messages", min: 1, max: int64Max,
		doc: "With a data directory, fsync the partition's segment once this many records were appended since the last fsync; without one, stored and reported."},
	{name: "flush.ms", kind: kindLong, scope: scopeTopic, synonym: "log.flush.interval.ms", min: 0, max: int64Max,
		doc: "With a data directory, an append fsyncs the partition's segment when this long has passed since the last fsync; without one, stored and reported."},
	{name: "file.delete.delay.ms", kind: kindLong, scope: scopeTopic, synonym: "log.segment.delete.delay.ms", min: 0, max: int64Max,
		doc: "Stored and reported; deleted records are dropped at once."},
	{name: "errors.deadletterqueue.group.enable", def: "false", kind: kindBool, scope: scopeTopic,
		doc: "Whether share groups may use the topic as their dead-letter topic (KIP-1191); no broker synonym."},
	{name: "preallocate", kind: kindBool, scope: scopeTopic, synonym: "log.preallocate",
		doc: "Stored and reported; logs are kept in memory."},
}

// cleanupPolicies are the items cleanup.policy may list.
var cleanupPolicies = []string{"delete", "compact"}

// lookupProperty finds a property by name and scope.
func lookupProperty(name string, scope propScope) (*property, bool) {
	for i := range properties {
		if properties[i].name == name && properties[i].scope == scope {
			return &properties[i], true
		}
	}
	return nil, false
}

// validate checks one value against the property's type and bounds.
func (p *property) validate(value string) error {
	switch p.kind {
	case kindInt, kindLong:
		bits := 64
		if p.kind == kindInt {
			bits = 32
		}
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, bits)
		if err != nil {
			return fmt.Errorf("%s: %q is not a whole number", p.name, value)
		}
		if n < p.min || n > p.max {
			return fmt.Errorf("%s: %d is outside [%d, %d]", p.name, n, p.min, p.max)
		}
	case kindBool:
		if v := strings.ToLower(strings.TrimSpace(value)); v != "true" && v != "false" {
			return fmt.Errorf("%s: %q is not true or false", p.name, value)
		}
	case kindEnum:
		if !slices.Contains(p.enum, strings.TrimSpace(value)) {
			return fmt.Errorf("%s: %q is not one of %s", p.name, value, strings.Join(p.enum, ", "))
		}
	case kindList:
		items := splitList(value)
		if len(items) == 0 {
			return fmt.Errorf("%s: the list is empty; give one or more of %s", p.name, strings.Join(p.enum, ", "))
		}
		for i, item := range items {
			if !slices.Contains(p.enum, item) {
				return fmt.Errorf("%s: %q is not one of %s", p.name, item, strings.Join(p.enum, ", "))
			}
			if slices.Contains(items[:i], item) {
				return fmt.Errorf("%s: %q is listed twice", p.name, item)
			}
		}
	case kindDouble:
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return fmt.Errorf("%s: %q is not a number", p.name, value)
		}
		if !(f >= p.minFloat && f <= p.maxFloat) { // also rejects NaN
			return fmt.Errorf("%s: %v is outside [%v, %v]", p.name, f, p.minFloat, p.maxFloat)
		}
	}
	return nil
}

// splitList splits a list value at commas, trimming spaces and dropping
// empty items, as Kafka parses its LIST properties.
func splitList(value string) []string {
	var items []string
	for item := range strings.SplitSeq(value, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}

// brokerProps is the validated set of broker properties: every property of
// broker scope, set or defaulted.
type brokerProps map[string]string

// newBrokerProps validates overrides and fills in defaults. An unknown name
// or a bad value is an error that names it.
func newBrokerProps(overrides map[string]string) (brokerProps, error) {
	props := make(brokerProps)
	for _, p := range properties {
		if p.scope == scopeBroker {
			props[p.name] = p.def
		}
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range overrides {
			if !yield(k) {
				return
			}
		}
	})
	for _, name := range names {
		p, ok := lookupProperty(name, scopeBroker)
		if !ok {
			return nil, fmt.Errorf("unknown broker property %q (see the configuration reference in the README)", name)
		}
		value := strings.TrimSpace(overrides[name])
		if err := p.validate(value); err != nil {
			return nil, err
		}
		props[name] = value
	}
	return props, nil
}

func (bp brokerProps) int64(name string) int64 {
	n, _ := strconv.ParseInt(bp[name], 10, 64) // validated at start
	return n
}

func (bp brokerProps) int32(name string) int32 { return int32(bp.int64(name)) }

func (bp brokerProps) bool(name string) bool { return strings.EqualFold(bp[name], "true") }
