// Package group is the group coordinator's domain logic: share-group
// (KIP-932) membership in share_*.go, classic groups (JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup) and their committed offsets in classic_*.go, and
// KIP-848 consumer groups (ConsumerGroupHeartbeat, ConsumerGroupDescribe)
// in consumer_*.go. migration.go moves an empty group between the classic
// and KIP-848 protocols. The rules are named in docs/groups.md and
// docs/share-groups.md; tests cite them.
//
// It imports only the standard library, locktimer and configdef (in which
// it declares its broker properties and GROUP configs): no kmsg, no
// broker, no storage. The broker translates requests into the plain types
// here and maps the sentinel errors of errors.go to Kafka codes.
//
// Shape:
//
//   - Registry records which kind of group owns a group ID, so a share group
//     ID cannot be used as a consumer group and the other way round. One
//     Registry is shared by every coordinator of the broker.
//   - ConfigStore holds the dynamic GROUP configs (config resource type 32),
//     validates them against the broker-level group.share.* bounds of
//     ShareConfig, and resolves a share group's effective config.
//   - ShareGroups owns every share group. Heartbeat implements
//     ShareGroupHeartbeat (validation order, epochs, join/leave/fencing,
//     session timeouts on the locktimer clock), Describe, List and Delete
//     serve ShareGroupDescribe, ListGroups and DeleteGroups.
//   - The simple assignor (share_assignor.go) computes target assignments.
//   - ConsumerGroups owns every KIP-848 consumer group, its server-side
//     assignors (group.consumer.assignors) and its committed offsets.
//   - ClassicGroups owns every classic group and its committed offsets.
//     Join and Sync return a channel that receives the answer once the
//     round (or the leader's sync) completes, bounded by the round's
//     rebalance timeout on the clock; session, rebalance, initial-delay and
//     sync timeouts and offset retention all run on one locktimer.Service.
//   - The three coordinators embed one coordinator (coordinator.go): the
//     group map and its lock, finding and claiming an ID in the Registry,
//     the look-again when a group is removed under a holder of its
//     pointer, List, Describe, a heartbeat's answer, deadline timers,
//     deleting an empty group, the invariant walk, Close and the retention
//     timer; the classic and KIP-848 ones also embed offsetJournals, the
//     data directory's hooks (journal.go), and move between each other
//     through one convertEmpty (migration.go). What differs per kind stays
//     in the kind's files.
//
// Topic metadata reaches the package through a caller-supplied TopicResolver
// (topics.go, shared by every kind of group), because storage is not
// importable here. Every partition the resolver reports is assignable: the
// broker creates share-partition state lazily, on a partition's first fetch
// (share-groups.md §9.5), so Kafka's "only initialised partitions are
// assignable" rule never holds anything back.
//
// Member leave and fencing do not touch share partitions (Kafka behaviour):
// records stay acquired until their locks expire or the share session
// closes, so the broker needs no word of membership changes.
//
// Decisions where share-groups.md leaves room:
//
//   - Assignor member order is join order; quotas are computed in exact
//     integer arithmetic (Kafka uses doubles). Over-shared partitions are
//     trimmed before over-quota members, as Kafka's builder does (§4.4;
//     the starting specification had the two steps the other way round);
//     ties drop a member's highest partitions. The result is
//     deterministic, not hash-order dependent.
//   - group.share.max.size is checked for joins and heartbeats (epoch >= 0)
//     of unknown members, not for leaves: Kafka's leave path never reaches
//     the size check, so leaving as an unknown member of a full group is
//     UNKNOWN_MEMBER_ID.
//   - After a leave or a session timeout the group epoch bumps at once; the
//     target assignment is recomputed by the next heartbeat (as Kafka), so
//     Describe may show AssignmentEpoch < GroupEpoch in between.
//   - Topic metadata is re-resolved on every heartbeat; any change to a
//     subscribed topic (created, deleted, partitions added, new ID) bumps the
//     group epoch. A rack change alone does not.
//   - DeleteGroups leaves the group's GROUP configs in place: they exist
//     independently of the group.
//   - consumer.* GROUP configs are validated against the broker's
//     group.consumer.* properties; streams.* ones against Kafka's default
//     group.streams.* bounds, since streams groups are not served.
package group
