package conformance_test

// known is one row of the table of expected answers. A row pins, for one
// scenario's key, what Apache Kafka 4.2 answers; sharebroker must give
// that answer unless the sharebroker column names a gap, and kfake must
// give its column (or Kafka's, when the column is empty).
type known struct {
	scenario, key string
	kafka         string
	sharebroker   string // set only for a known sharebroker gap
	kfake         string // set where kfake differs from Kafka
	rule          string // the share-groups.md §8 item or Kafka rule
}

func (k known) sharebrokerWant() string {
	if k.sharebroker != "" {
		return k.sharebroker
	}
	return k.kafka
}

func (k known) kfakeWant() string {
	if k.kfake != "" {
		return k.kfake
	}
	return k.kafka
}

// knownTable lists every key on which the peers differ, and a few on
// which they agree that are worth pinning to Kafka's answer. A row whose
// kfake column stops matching fails the test: when kfake is fixed, the
// row's kfake column is dropped (and the row too, if nothing is left to
// pin). docs/conformance.md explains each row.
var knownTable = []known{
	// Client-visible record life cycle: both peers agree with Kafka.
	{scenario: "release-redelivers", key: "second poll", kafka: "r0@2", rule: "§1.2: RELEASE makes the record AVAILABLE; the next acquisition counts a delivery"},
	{scenario: "reject-archives", key: "second poll", kafka: "r1@1", rule: "§1.2: REJECT archives the record"},
	{scenario: "close-releases", key: "c2 polled after c1 closed", kafka: "r0@2", rule: "§1.2 row 8: session close releases and counts the attempt (§8 item 3, no longer a difference)"},

	// A late accept after the lock expired and the new owner accepted.
	{scenario: "lock-expiry-late-accept", key: "m2 acquired after expiry", kafka: "[0-2@2]", rule: "§1.2: lock expiry makes the records AVAILABLE"},
	{scenario: "lock-expiry-late-accept", key: "m1 late accept", kafka: "NONE",
		rule: "§1.2 ack-below-spso: the records lie wholly below SPSO; Kafka skips such a batch (SharePartition.acknowledge) and both peers answer NONE"},

	// Membership and assignment.
	{scenario: "pooled-assignment", key: "m2 partitions", kafka: "1", kfake: "2", rule: "§8 item 17: kfake balances per topic; Kafka pools homogeneous subscriptions"},
	{scenario: "pooled-assignment", key: "m1 partitions", kafka: "1", kfake: "2", rule: "§8 item 17"},
	{scenario: "describe", key: "member-1 client host", kafka: "/127.0.0.1", kfake: "127.0.0.1:<port>",
		rule: "Kafka rule (not in §8): ClientHost is the client address as Java's InetAddress.toString prints it, without a port; kfake sends the remote host:port"},
	{scenario: "describe", key: "member-2 client host", kafka: "/127.0.0.1", kfake: "127.0.0.1:<port>", rule: "Kafka's ClientHost form, as member-1"},
	{scenario: "rejoin-epoch-0", key: "m1 rejoins with epoch 0", kafka: "FENCED_MEMBER_EPOCH", kfake: "NONE",
		rule: "§8 item 18: kfake never fences a rejoin with epoch 0; Kafka applies the epoch rule of §4.2"},
	{scenario: "heartbeat-interval-group-config", key: "heartbeat interval", kafka: "7000", kfake: "5000",
		rule: "§8 item 21: kfake uses only the broker-level interval"},

	// Administration.
	{scenario: "list-groups-type-filter", key: "type SHARE", kafka: "[workers/share/share/Stable]", rule: "§5.4: TypesFilter is case-insensitive"},
	{scenario: "delete-groups", key: "delete with a member", kafka: "NON_EMPTY_GROUP", rule: "§5.4"},
	{scenario: "delete-groups", key: "describe after leave", kafka: "NONE Empty", kfake: "GROUP_ID_NOT_FOUND",
		rule: "§8 item 20: kfake deletes a share group when it has no members and no partition state"},
	{scenario: "delete-groups", key: "list after leave", kafka: "[workers/share/share/Empty]", kfake: "[]", rule: "§8 item 20"},
	{scenario: "delete-groups", key: "delete when empty", kafka: "NONE", kfake: "GROUP_ID_NOT_FOUND", rule: "§8 item 20"},
	{scenario: "join-group-on-share-group", key: "join group", kafka: "INCONSISTENT_GROUP_PROTOCOL", kfake: "GROUP_ID_NOT_FOUND",
		rule: "§8 item 22: a classic JoinGroup on a share group's ID"},

	// Raw ShareFetch and ShareAcknowledge.
	{scenario: "fetch-max-records-0", key: "acquired", kafka: "[]", kfake: "[0-2@1]", rule: "§8 item 8: kfake reads MaxRecords <= 0 as 500"},
	{scenario: "renew-fetch-partition-without-acks", key: "renew top level", kafka: "NONE", kfake: "INVALID_REQUEST",
		rule: "§8 item 10: kfake rejects renew fetches naming a partition without ack batches"},
	{scenario: "renew-fetch-partition-without-acks", key: "renew partition 0 ack", kafka: "NONE", kfake: absent, rule: "§8 item 10"},
	{scenario: "adjacent-ack-batches", key: "overlapping by one offset", kafka: "INVALID_RECORD_STATE", kfake: "INVALID_REQUEST",
		rule: "§8 item 11 and §2.5: Kafka's validation lets FirstOffset == previous LastOffset through; the share partition then finds offset 1 acknowledged and rolls the request back"},
	{scenario: "adjacent-ack-batches", key: "then disjoint", kafka: "NONE", rule: "§2.5: the failed request applied nothing"},
	{scenario: "ack-below-spso", key: "accept 0 again", kafka: "NONE",
		rule: "§1.2 ack-below-spso: a second ACCEPT of records SPSO has passed succeeds and changes nothing"},
	{scenario: "ack-unknown-share-group", key: "ack", kafka: "top-level SHARE_SESSION_NOT_FOUND", kfake: "top-level GROUP_ID_NOT_FOUND",
		rule: "§8 item 12: Kafka checks only the share session"},
	{scenario: "leave-keeps-records", key: "m2 acquired", kafka: "[]", kfake: "[0-2@2]",
		rule: "§8 item 4: kfake releases a leaving member's records; Kafka keeps them until session close, disconnect or lock expiry"},
	{scenario: "top-level-error-lock-timeout", key: "empty member id lock timeout", kafka: "0", kfake: "30000",
		rule: "§8 item 15: Kafka sends 0 with a top-level error"},
	{scenario: "top-level-error-lock-timeout", key: "no session lock timeout", kafka: "0", kfake: "30000", rule: "§8 item 15"},
	{scenario: "top-level-error-lock-timeout", key: "success lock timeout", kafka: "30000", rule: "§5.6: share.record.lock.duration.ms defaults to 30000"},

	// ApiVersions.
	{scenario: "api-versions", key: "key 76 ShareGroupHeartbeat", kafka: "v1-v1", kfake: "v0-v1", rule: "§8 item 16: Kafka 4.1+ starts the share APIs at v1"},
	{scenario: "api-versions", key: "key 77 ShareGroupDescribe", kafka: "v1-v1", kfake: "v0-v1", rule: "§8 item 16"},
	{scenario: "api-versions", key: "key 78 ShareFetch", kafka: "v1-v2", kfake: "v0-v2", rule: "§8 item 16"},
	{scenario: "api-versions", key: "key 79 ShareAcknowledge", kafka: "v1-v2", kfake: "v0-v2", rule: "§8 item 16"},
	{scenario: "api-versions", key: "share.version supported", kafka: "0-1", kfake: "0-2",
		rule: "§8 found by testing: kfake advertises share.version 2 (KIP-1191) without implementing it; Kafka 4.2 tops out at 1"},
	{scenario: "api-versions", key: "share.version finalized", kafka: "1-1", kfake: "2-2", rule: "§8 found by testing"},

	// Beyond share groups.
	{scenario: "end-txn-v5", key: "produce v12+, partition not added", kafka: "NONE", rule: "transactions.md produce-implicit-add"},
	{scenario: "end-txn-v5", key: "commit", kafka: "NONE epoch +1", rule: "transactions.md end-txn-bump: every EndTxn v5 raises the epoch"},
	{scenario: "end-txn-v5", key: "commit retried", kafka: "NONE epoch +1", rule: "end-txn-bump: the epoch below the current one is the retry"},
	{scenario: "end-txn-v5", key: "commit, nothing ongoing", kafka: "INVALID_TXN_STATE", kfake: "NONE epoch +-1",
		rule: "end-txn-bump: Kafka's coordinator refuses a commit in CompleteCommit that is no retry; kfake answers success with epoch -1"},
	{scenario: "end-txn-v5", key: "abort, nothing ongoing", kafka: "NONE epoch +2", rule: "end-txn-bump: an abort with nothing ongoing raises the epoch"},
	{scenario: "list-transactions-pattern", key: "pattern orders-.*", kafka: "NONE [orders-1]", kfake: "NONE [orders-1 xorders-1]",
		rule: "transactions.md list-transactions-pattern (KIP-1152): the pattern must match the whole ID; kfake finds it anywhere"},
}
