package brokerconfig

import (
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"

	"github.com/sharebroker/sharebroker/configdef"
	"github.com/sharebroker/sharebroker/group"
)

// A Property is one Kafka configuration name the broker honours, with
// Kafka's default. Broker properties are set at start (--config key=value);
// topic properties are set per topic and fall back to their broker synonym;
// GROUP configs are set per group ID. Every one is declared once, as a
// configdef.Def (brokerProperties here, the group.share.* properties and
// the GROUP configs in the group package); the table gathers them, and is
// the one place the broker looks up names, defaults and bounds. The
// README's configuration reference is generated from it.
type Property struct {
	Name    string
	Default string // group scope: the default as the README shows it
	Kind    configdef.Kind
	Scope   configdef.Scope
	Synonym string // topic scope: the broker property that supplies the default
	Doc     string
	spec    configdef.Def // as declared; Validate checks values against it
}

// table lists every honoured property: the broker's own declarations, then
// the group package's. Within a scope the order is the README's.
var table = gatherProperties()

// Properties yields every property of the table, in its order. The
// properties are the table's own: read them, do not change them.
func Properties() iter.Seq[*Property] {
	return func(yield func(*Property) bool) {
		for i := range table {
			if !yield(&table[i]) {
				return
			}
		}
	}
}

func gatherProperties() []Property {
	var out []Property
	for _, d := range brokerProperties {
		out = append(out, declared(d))
	}
	for _, d := range connectionProperties {
		out = append(out, declared(d))
	}
	for _, d := range telemetryProperties {
		out = append(out, declared(d))
	}
	for _, d := range group.GroupConfigProperties() {
		out = append(out, declared(d))
	}
	for _, sp := range group.ShareBrokerProperties() {
		out = append(out, declared(sp.Def))
	}
	return out
}

// declared is d as the table holds it. A GROUP config's default is shown
// as the reference shows it: the broker property it comes from, or its
// value ("" for an empty one), quoted as code.
func declared(d configdef.Def) Property {
	p := Property{Name: d.Name, Default: d.Default, Kind: d.Kind, Scope: d.Scope, Synonym: d.Synonym, Doc: d.Doc, spec: d}
	if d.Scope == configdef.Group {
		switch {
		case d.Synonym != "":
			p.Default = "`" + d.Synonym + "`"
		case d.Default == "":
			p.Default = "`\"\"`"
		default:
			p.Default = "`" + d.Default + "`"
		}
		p.Synonym = ""
	}
	return p
}

// brokerProperties declares the broker and topic properties; the group
// package declares its own (group.ShareBrokerProperties,
// group.GroupConfigProperties). Order is the README's order.
var brokerProperties = []configdef.Def{
	// Broker.
	{Name: "auto.create.topics.enable", Default: "true", Kind: configdef.Bool, Scope: configdef.Broker,
		Doc: "Create a topic when Metadata asks for an unknown one (and the client allows it)."},
	{Name: "num.partitions", Default: "1", Kind: configdef.Int, Scope: configdef.Broker, Min: 1, Max: configdef.Int32Max,
		Doc: "Partitions of an auto-created topic, and of CreateTopics asking for -1."},
	{Name: "default.replication.factor", Default: "1", Kind: configdef.Int, Scope: configdef.Broker, Min: 1, Max: 1,
		Doc: "Replication factor reported for new topics; a single node holds one replica."},
	{Name: "delete.topic.enable", Default: "true", Kind: configdef.Bool, Scope: configdef.Broker,
		Doc: "Allow DeleteTopics."},
	{Name: "socket.request.max.bytes", Default: "104857600", Kind: configdef.Int, Scope: configdef.Broker, Min: 1, Max: configdef.Int32Max,
		Doc: "Largest request frame accepted; a larger one closes the connection before anything is allocated."},
	{Name: "message.max.bytes", Default: "1048588", Kind: configdef.Int, Scope: configdef.Broker, Min: 0, Max: configdef.Int32Max,
		Doc: "Largest record batch accepted; default of the topic property max.message.bytes."},
	{Name: "fetch.max.bytes", Default: "57671680", Kind: configdef.Int, Scope: configdef.Broker, Min: 1024, Max: configdef.Int32Max,
		Doc: "Upper bound of the bytes one Fetch response returns, whatever the request asks."},
	{Name: "max.incremental.fetch.session.cache.slots", Default: "1000", Kind: configdef.Int, Scope: configdef.Broker, Min: 0, Max: configdef.Int32Max,
		Doc: "Fetch sessions (KIP-227) each node keeps; a full fetch finding none free and none evictable is answered without a session."},
	{Name: "log.retention.ms", Default: "604800000", Kind: configdef.Long, Scope: configdef.Broker, Min: -1, Max: configdef.Int64Max,
		Doc: "Default of retention.ms (7 days); -1 keeps records forever."},
	{Name: "log.retention.bytes", Default: "-1", Kind: configdef.Long, Scope: configdef.Broker, Min: -1, Max: configdef.Int64Max,
		Doc: "Default of retention.bytes per partition; -1 is unlimited."},
	{Name: "log.retention.check.interval.ms", Default: "300000", Kind: configdef.Long, Scope: configdef.Broker, Min: 1, Max: configdef.Int64Max,
		Doc: "How often retention is applied to every partition."},
	{Name: "sharebroker.kafka.version", Default: "4.4", Kind: configdef.Enum, Scope: configdef.Broker, Enum: []string{"4.0", "4.1", "4.2", "4.3", "4.4"},
		Doc: "sharebroker's own, not Kafka's (the flag `--kafka-version`): the Kafka release the broker is. ApiVersions advertises that release's version range of each API served, and a new cluster's feature levels are that release's (docs/features.md)."},
	{Name: "transaction.version", Default: "2", Kind: configdef.Int, Scope: configdef.Broker, Min: 0, Max: 2,
		Doc: "The initial finalized level of the transaction.version feature, as `kafka-storage format --feature` sets it; unset, the release's (the default shown; 2 for every 4.x). At 2, clients may use KIP-890's transactions: Produce v12+ and TxnOffsetCommit v5+ add their partition or group themselves, and EndTxn v5 raises the epoch with every transaction. Below 2 those versions keep the older rules. UpdateFeatures changes it at run time (docs/features.md)."},
	{Name: "share.version", Default: "2", Kind: configdef.Int, Scope: configdef.Broker, Min: 0, Max: 2,
		Doc: "The initial finalized level of the share.version feature; unset, the release's (the default shown is 4.4's; 0 for 4.0 and 4.1, 1 for 4.2 and 4.3). 0 turns share groups off (their APIs answer UNSUPPORTED_VERSION); 1 is Kafka 4.2's share groups; 2 adds KIP-1191's dead-letter queues (share-groups.md §10): below 2 no dead-letter record is written, whatever the group configs say. UpdateFeatures changes it at run time (docs/features.md)."},
	{Name: "errors.deadletterqueue.topic.name.prefix", Default: "dlq.", Kind: configdef.String, Scope: configdef.Broker,
		Doc: "Prefix every share group's dead-letter topic must have (KIP-1191); empty allows any name. Checked when a dead letter is written."},
	{Name: "errors.deadletterqueue.auto.create.topics.enable", Default: "false", Kind: configdef.Bool, Scope: configdef.Broker,
		Doc: "Create a share group's missing dead-letter topic on its first dead letter (KIP-1191), with num.partitions partitions, opted in, CreateTime; false refuses the write."},
	{Name: "sharebroker.record.story.events", Default: "4096", Kind: configdef.Int, Scope: configdef.Broker, Min: 0, Max: 1 << 20,
		Doc: "sharebroker's own, not Kafka's: how many record-story events each share partition keeps for `GET /v1/share-groups/{group}/topics/{topic}/partitions/{p}/records/{offset}` and the console (docs/share-groups.md record-story). One event covers a run of offsets that moved together; when the ring is full the oldest events are dropped and stories that lost events say `truncated`. 0 turns stories off."},
	{Name: "transaction.max.timeout.ms", Default: "900000", Kind: configdef.Int, Scope: configdef.Broker, Min: 1, Max: configdef.Int32Max,
		Doc: "Largest TransactionTimeoutMs InitProducerId accepts; a larger one is INVALID_TRANSACTION_TIMEOUT."},
	{Name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", Default: "10000", Kind: configdef.Int, Scope: configdef.Broker, Min: 1, Max: configdef.Int32Max,
		Doc: "How often, on the broker clock, transactions open past their timeout are aborted (with the epoch raised)."},
	{Name: "transactional.id.expiration.ms", Default: "604800000", Kind: configdef.Int, Scope: configdef.Broker, Min: 1, Max: configdef.Int32Max,
		Doc: "How long a transactional ID may stay idle before it is forgotten."},
	{Name: "log.message.timestamp.type", Default: "CreateTime", Kind: configdef.Enum, Scope: configdef.Broker, Enum: []string{"CreateTime", "LogAppendTime"},
		Doc: "Default of message.timestamp.type."},
	{Name: "log.cleanup.policy", Default: "delete", Kind: configdef.List, Scope: configdef.Broker, Enum: cleanupPolicies,
		Doc: "Default of cleanup.policy. Compaction is not performed; the value is stored and reported."},
	{Name: "log.segment.bytes", Default: "1073741824", Kind: configdef.Int, Scope: configdef.Broker, Min: 1048576, Max: configdef.Int32Max,
		Doc: "Default of segment.bytes: with a data directory, the size at which a partition starts a new segment file; without one, stored and reported."},
	{Name: "min.insync.replicas", Default: "1", Kind: configdef.Int, Scope: configdef.Broker, Min: 1, Max: configdef.Int32Max,
		Doc: "Default of the topic property; an acks=-1 produce needs this many nodes up (capped at --nodes); a single node is always in sync."},
	{Name: "compression.type", Default: "producer", Kind: configdef.Enum, Scope: configdef.Broker, Enum: []string{"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"},
		Doc: "Default of the topic property. Batches are stored as produced."},
	{Name: "log.roll.ms", Default: "604800000", Kind: configdef.Long, Scope: configdef.Broker, Min: 1, Max: configdef.Int64Max,
		Doc: "Default of segment.ms (7 days, what Kafka derives from log.roll.hours). Stored and reported; logs are not segmented."},
	{Name: "log.roll.jitter.ms", Default: "0", Kind: configdef.Long, Scope: configdef.Broker, Min: 0, Max: configdef.Int64Max,
		Doc: "Default of segment.jitter.ms. Stored and reported; logs are not segmented."},
	{Name: "log.index.size.max.bytes", Default: "10485760", Kind: configdef.Int, Scope: configdef.Broker, Min: 4, Max: configdef.Int32Max,
		Doc: "Default of segment.index.bytes. Stored and reported; there are no index files."},
	{Name: "log.index.interval.bytes", Default: "4096", Kind: configdef.Int, Scope: configdef.Broker, Min: 0, Max: configdef.Int32Max,
		Doc: "Default of index.interval.bytes. Stored and reported; there are no index files."},
	{Name: "log.cleaner.min.compaction.lag.ms", Default: "0", Kind: configdef.Long, Scope: configdef.Broker, Min: 0, Max: configdef.Int64Max,
		Doc: "Default of min.compaction.lag.ms. Stored and reported; compaction is not performed."},
	{Name: "log.cleaner.max.compaction.lag.ms", Default: "9223372036854775807", Kind: configdef.Long, Scope: configdef.Broker, Min: 1, Max: configdef.Int64Max,
		Doc: "Default of max.compaction.lag.ms. Stored and reported; compaction is not performed."},
	{Name: "log.cleaner.delete.retention.ms", Default: "86400000", Kind: configdef.Long, Scope: configdef.Broker, Min: 0, Max: configdef.Int64Max,
		Doc: "Default of delete.retention.ms (1 day). Stored and reported; compaction is not performed."},
	{Name: "log.cleaner.min.cleanable.ratio", Default: "0.5", Kind: configdef.Double, Scope: configdef.Broker, MinFloat: 0, MaxFloat: 1,
		Doc: "Default of min.cleanable.dirty.ratio. Stored and reported; compaction is not performed."},
	{Name: "unclean.leader.election.enable", Default: "false", Kind: configdef.Bool, Scope: configdef.Broker,
		Doc: "Default of the topic property. Stored and reported; a single node has no other replica to elect."},
	{Name: "log.message.timestamp.before.max.ms", Default: "9223372036854775807", Kind: configdef.Long, Scope: configdef.Broker, Min: 0, Max: configdef.Int64Max,
		Doc: "Default of message.timestamp.before.max.ms. Stored and reported; produce does not check it."},
	{Name: "log.message.timestamp.after.max.ms", Default: "3600000", Kind: configdef.Long, Scope: configdef.Broker, Min: 0, Max: configdef.Int64Max,
		Doc: "Default of message.timestamp.after.max.ms (1 hour, Kafka 4's default). Stored and reported; produce does not check it."},
	{Name: "log.flush.interval.messages", Default: "9223372036854775807", Kind: configdef.Long, Scope: configdef.Broker, Min: 1, Max: configdef.Int64Max,
		Doc: "Default of flush.messages. With a data directory, a partition's segment is fsynced once this many records were appended since its last fsync (docs/durability.md: flush-as-kafka); the default never fsyncs, as Kafka's."},
	{Name: "log.flush.interval.ms", Default: "9223372036854775807", Kind: configdef.Long, Scope: configdef.Broker, Min: 0, Max: configdef.Int64Max,
		Doc: "Default of flush.ms. With a data directory, an append fsyncs its segment when this long has passed since the last fsync; the default never fsyncs, as Kafka's."},
	{Name: "share.coordinator.snapshot.update.records.per.snapshot", Default: "500", Kind: configdef.Int, Scope: configdef.Broker, Min: 0, Max: 500,
		Doc: "With a data directory, the metadata log is rewritten as a snapshot in the background once this many records (and at least as many as its last snapshot holds) were appended to it; Kafka's share coordinator writes a share partition's snapshot after this many updates (docs/durability.md: meta-compaction). 0 is as 1."},
	{Name: "log.dirs", Default: "", Kind: configdef.String, Scope: configdef.Broker,
		Doc: "The data directory (as --data-dir and SHAREBROKER_DATA_DIR): topics, records and log start offsets survive restarts and SIGKILL (docs/durability.md). One directory; a list of more is an error. Empty keeps everything in memory."},
	{Name: "log.segment.delete.delay.ms", Default: "60000", Kind: configdef.Long, Scope: configdef.Broker, Min: 0, Max: configdef.Int64Max,
		Doc: "Default of file.delete.delay.ms. Stored and reported; deleted records are dropped at once."},
	{Name: "log.preallocate", Default: "false", Kind: configdef.Bool, Scope: configdef.Broker,
		Doc: "Default of preallocate. Stored and reported; logs are kept in memory."},
	{Name: "group.min.session.timeout.ms", Default: "6000", Kind: configdef.Int, Scope: configdef.Broker, Min: 0, Max: configdef.Int32Max,
		Doc: "Shortest session timeout a classic group member may ask for; shorter answers INVALID_SESSION_TIMEOUT."},
	{Name: "group.max.session.timeout.ms", Default: "1800000", Kind: configdef.Int, Scope: configdef.Broker, Min: 0, Max: configdef.Int32Max,
		Doc: "Longest session timeout a classic group member may ask for; longer answers INVALID_SESSION_TIMEOUT."},
	{Name: "group.initial.rebalance.delay.ms", Default: "0", Kind: configdef.Int, Scope: configdef.Broker, Min: 0, Max: configdef.Int32Max,
		Doc: "How long the first rebalance of an empty classic group waits for more members, extended by each joiner up to the rebalance timeout. Kafka's default is 3000; 0 here, so a test's consumers get their first records at once (test-defaults)."},
	{Name: "group.max.size", Default: "2147483647", Kind: configdef.Int, Scope: configdef.Broker, Min: 1, Max: configdef.Int32Max,
		Doc: "Most members of one classic group; one more answers GROUP_MAX_SIZE_REACHED."},
	{Name: "group.consumer.session.timeout.ms", Default: "45000", Kind: configdef.Int, Scope: configdef.Broker, Min: 1, Max: configdef.Int32Max,
		Doc: "Member session timeout of KIP-848 consumer groups (consumer.session.timeout.ms overrides it per group)."},
	{Name: "group.consumer.min.session.timeout.ms", Default: "45000", Kind: configdef.Int, Scope: configdef.Broker, Min: 1, Max: configdef.Int32Max,
		Doc: "Lowest session timeout of a KIP-848 consumer group."},
	{Name: "group.consumer.max.session.timeout.ms", Default: "60000", Kind: configdef.Int, Scope: configdef.Broker, Min: 1, Max: configdef.Int32Max,
		Doc: "Highest session timeout of a KIP-848 consumer group."},
	{Name: "group.consumer.heartbeat.interval.ms", Default: "5000", Kind: configdef.Int, Scope: configdef.Broker, Min: 1, Max: configdef.Int32Max,
		Doc: "Heartbeat interval KIP-848 consumer group members are told (consumer.heartbeat.interval.ms overrides it per group)."},
	{Name: "group.consumer.min.heartbeat.interval.ms", Default: "5000", Kind: configdef.Int, Scope: configdef.Broker, Min: 1, Max: configdef.Int32Max,
		Doc: "Lowest heartbeat interval of a KIP-848 consumer group."},
	{Name: "group.consumer.max.heartbeat.interval.ms", Default: "15000", Kind: configdef.Int, Scope: configdef.Broker, Min: 1, Max: configdef.Int32Max,
		Doc: "Highest heartbeat interval of a KIP-848 consumer group."},
	{Name: "group.consumer.max.size", Default: "2147483647", Kind: configdef.Int, Scope: configdef.Broker, Min: 1, Max: configdef.Int32Max,
		Doc: "Most members of one KIP-848 consumer group; one more answers GROUP_MAX_SIZE_REACHED."},
	{Name: "group.consumer.assignors", Default: "uniform,range", Kind: configdef.List, Scope: configdef.Broker, Enum: []string{"uniform", "range"},
		Doc: "Server-side assignors of KIP-848 consumer groups; the first is the default."},
	{Name: "offsets.retention.minutes", Default: "10080", Kind: configdef.Int, Scope: configdef.Broker, Min: 1, Max: configdef.Int32Max,
		Doc: "Committed offsets of a group without members expire this long after it became empty (7 days)."},
	{Name: "offsets.retention.check.interval.ms", Default: "600000", Kind: configdef.Long, Scope: configdef.Broker, Min: 1, Max: configdef.Int64Max,
		Doc: "How often committed offsets are checked for expiry."},
	{Name: "sasl.enabled.mechanisms", Default: "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", Kind: configdef.List, Scope: configdef.Broker, Enum: []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"},
		Doc: "Mechanisms SASL_PLAINTEXT and SASL_SSL listeners offer. Kafka's default is GSSAPI, which is not built; OAUTHBEARER takes unsecured tokens (alg none) whose `sub` is the user (sasl-mechanisms)."},
	{Name: "connections.max.reauth.ms", Default: "0", Kind: configdef.Long, Scope: configdef.Broker, Min: 0, Max: configdef.Int64Max,
		Doc: "Session lifetime of a SASL connection (KIP-368): a client must re-authenticate within it or its next request closes the connection. 0 turns it off (an OAUTHBEARER token's expiry still applies)."},
	{Name: "sasl.server.max.receive.size", Default: "524288", Kind: configdef.Int, Scope: configdef.Broker, Min: 1, Max: configdef.Int32Max,
		Doc: "Largest frame a SASL connection may send before it has authenticated; a larger one closes it."},
	{Name: "offset.metadata.max.bytes", Default: "4096", Kind: configdef.Int, Scope: configdef.Broker, Min: 0, Max: configdef.Int32Max,
		Doc: "Longest metadata string an offset commit may carry; longer answers OFFSET_METADATA_TOO_LARGE."},
	{Name: "authorizer.class.name", Default: "", Kind: configdef.String, Scope: configdef.Broker,
		Doc: "`org.apache.kafka.metadata.authorizer.StandardAuthorizer` turns ACLs on: every request is checked as Kafka checks it (docs/security.md, ACLs). Empty (the default) allows everything, and the ACL APIs answer SECURITY_DISABLED. Any other class name stops the broker at start."},
	{Name: "super.users", Default: "", Kind: configdef.String, Scope: configdef.Broker,
		Doc: "Principals allowed everything whatever the ACLs say, separated by semicolons (`User:admin;User:CN=ops`)."},
	{Name: "allow.everyone.if.no.acl.found", Default: "false", Kind: configdef.Bool, Scope: configdef.Broker,
		Doc: "With ACLs on, allow an operation on a resource no ACL applies to at all."},

	// Topic.
	{Name: "retention.ms", Kind: configdef.Long, Scope: configdef.Topic, Synonym: "log.retention.ms", Min: -1, Max: configdef.Int64Max,
		Doc: "Batches whose newest timestamp is older than this are deleted."},
	{Name: "retention.bytes", Kind: configdef.Long, Scope: configdef.Topic, Synonym: "log.retention.bytes", Min: -1, Max: configdef.Int64Max,
		Doc: "Oldest batches are deleted while a partition holds more than this."},
	{Name: "max.message.bytes", Kind: configdef.Int, Scope: configdef.Topic, Synonym: "message.max.bytes", Min: 0, Max: configdef.Int32Max,
		Doc: "Largest record batch accepted for the topic."},
	{Name: "message.timestamp.type", Kind: configdef.Enum, Scope: configdef.Topic, Synonym: "log.message.timestamp.type", Enum: []string{"CreateTime", "LogAppendTime"},
		Doc: "LogAppendTime stamps each batch with the broker's clock on append."},
	{Name: "cleanup.policy", Kind: configdef.List, Scope: configdef.Topic, Synonym: "log.cleanup.policy", Enum: cleanupPolicies,
		Doc: "Stored and reported; compaction is not performed."},
	{Name: "segment.bytes", Kind: configdef.Int, Scope: configdef.Topic, Synonym: "log.segment.bytes", Min: 1048576, Max: configdef.Int32Max,
		Doc: "With a data directory, the size at which a partition starts a new segment file; without one, stored and reported."},
	{Name: "min.insync.replicas", Kind: configdef.Int, Scope: configdef.Topic, Synonym: "min.insync.replicas", Min: 1, Max: configdef.Int32Max,
		Doc: "An acks=-1 produce needs this many nodes up (capped at --nodes), else NOT_ENOUGH_REPLICAS; a single node is always in sync."},
	{Name: "compression.type", Kind: configdef.Enum, Scope: configdef.Topic, Synonym: "compression.type", Enum: []string{"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"},
		Doc: "Stored and reported; batches are stored as produced."},
	{Name: "segment.ms", Kind: configdef.Long, Scope: configdef.Topic, Synonym: "log.roll.ms", Min: 1, Max: configdef.Int64Max,
		Doc: "Stored and reported; logs are not segmented."},
	{Name: "segment.jitter.ms", Kind: configdef.Long, Scope: configdef.Topic, Synonym: "log.roll.jitter.ms", Min: 0, Max: configdef.Int64Max,
		Doc: "Stored and reported; logs are not segmented."},
	{Name: "segment.index.bytes", Kind: configdef.Int, Scope: configdef.Topic, Synonym: "log.index.size.max.bytes", Min: 4, Max: configdef.Int32Max,
		Doc: "Stored and reported; there are no index files."},
	{Name: "index.interval.bytes", Kind: configdef.Int, Scope: configdef.Topic, Synonym: "log.index.interval.bytes", Min: 0, Max: configdef.Int32Max,
		Doc: "Stored and reported; there are no index files."},
	{Name: "min.compaction.lag.ms", Kind: configdef.Long, Scope: configdef.Topic, Synonym: "log.cleaner.min.compaction.lag.ms", Min: 0, Max: configdef.Int64Max,
		Doc: "Stored and reported; compaction is not performed."},
	{Name: "max.compaction.lag.ms", Kind: configdef.Long, Scope: configdef.Topic, Synonym: "log.cleaner.max.compaction.lag.ms", Min: 1, Max: configdef.Int64Max,
		Doc: "Stored and reported; compaction is not performed."},
	{Name: "delete.retention.ms", Kind: configdef.Long, Scope: configdef.Topic, Synonym: "log.cleaner.delete.retention.ms", Min: 0, Max: configdef.Int64Max,
		Doc: "Stored and reported; compaction is not performed, so there are no tombstones to expire."},
	{Name: "min.cleanable.dirty.ratio", Kind: configdef.Double, Scope: configdef.Topic, Synonym: "log.cleaner.min.cleanable.ratio", MinFloat: 0, MaxFloat: 1,
		Doc: "Stored and reported; compaction is not performed."},
	{Name: "unclean.leader.election.enable", Kind: configdef.Bool, Scope: configdef.Topic, Synonym: "unclean.leader.election.enable",
		Doc: "Stored and reported; a single node has no other replica to elect."},
	{Name: "message.timestamp.before.max.ms", Kind: configdef.Long, Scope: configdef.Topic, Synonym: "log.message.timestamp.before.max.ms", Min: 0, Max: configdef.Int64Max,
		Doc: "Stored and reported; produce does not check it."},
	{Name: "message.timestamp.after.max.ms", Kind: configdef.Long, Scope: configdef.Topic, Synonym: "log.message.timestamp.after.max.ms", Min: 0, Max: configdef.Int64Max,
		Doc: "Stored and reported; produce does not check it."},
	{Name: "flush.messages", Kind: configdef.Long, Scope: configdef.Topic, Synonym: "log.flush.interval.messages", Min: 1, Max: configdef.Int64Max,
		Doc: "With a data directory, fsync the partition's segment once this many records were appended since the last fsync; without one, stored and reported."},
	{Name: "flush.ms", Kind: configdef.Long, Scope: configdef.Topic, Synonym: "log.flush.interval.ms", Min: 0, Max: configdef.Int64Max,
		Doc: "With a data directory, an append fsyncs the partition's segment when this long has passed since the last fsync; without one, stored and reported."},
	{Name: "file.delete.delay.ms", Kind: configdef.Long, Scope: configdef.Topic, Synonym: "log.segment.delete.delay.ms", Min: 0, Max: configdef.Int64Max,
		Doc: "Stored and reported; deleted records are dropped at once."},
	{Name: "errors.deadletterqueue.group.enable", Default: "false", Kind: configdef.Bool, Scope: configdef.Topic,
		Doc: "Whether share groups may use the topic as their dead-letter topic (KIP-1191); no broker synonym."},
	{Name: "preallocate", Kind: configdef.Bool, Scope: configdef.Topic, Synonym: "log.preallocate",
		Doc: "Stored and reported; logs are kept in memory."},
}

// cleanupPolicies are the items cleanup.policy may list.
var cleanupPolicies = []string{"delete", "compact"}

// Lookup finds a property by name and scope.
func Lookup(name string, scope configdef.Scope) (*Property, bool) {
	for i := range table {
		if table[i].Name == name && table[i].Scope == scope {
			return &table[i], true
		}
	}
	return nil, false
}

// Validate checks one value against the property's type and bounds.
func (p *Property) Validate(value string) error { return p.spec.Validate(value) }

// Props is the validated set of broker properties: every property of
// broker scope, set or defaulted. Its values were checked at start, so the
// typed accessors do not fail.
type Props map[string]string

// newProps validates overrides and fills in defaults. An unknown name or a
// bad value is an error that names it.
func newProps(overrides map[string]string) (Props, error) {
	props := make(Props)
	for _, p := range table {
		if p.Scope == configdef.Broker {
			props[p.Name] = p.Default
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
		p, ok := Lookup(name, configdef.Broker)
		if !ok {
			return nil, fmt.Errorf("unknown broker property %q (see the configuration reference in the README)", name)
		}
		value := strings.TrimSpace(overrides[name])
		if err := p.Validate(value); err != nil {
			return nil, err
		}
		props[name] = value
	}
	return props, nil
}

// Int64 is the value of an INT or LONG property.
func (bp Props) Int64(name string) int64 {
	n, _ := strconv.ParseInt(bp[name], 10, 64) // validated at start
	return n
}

// Int32 is the value of an INT property.
func (bp Props) Int32(name string) int32 { return int32(bp.Int64(name)) }

// Bool is the value of a BOOLEAN property.
func (bp Props) Bool(name string) bool { return strings.EqualFold(bp[name], "true") }
