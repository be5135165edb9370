package features

// What the finalized levels turn on, read at each request so that an
// UpdateFeatures at run time takes effect with the next one
// (features-gate-live).

// Gate is the level of a feature an API needs.
type Gate struct {
	Feature string
	Level   int16
}

// apiGates are the APIs Kafka answers UNSUPPORTED_VERSION below a level
// (features-api-gate), by API key:
//   - the share-group APIs below share.version 1: KafkaApis checks
//     isShareGroupProtocolEnabled first in handleShareGroupHeartbeat,
//     handleShareGroupDescribe, handleShareFetchRequest,
//     handleShareAcknowledgeRequest and the three share-group offset
//     handlers, and answers getErrorResponse(UNSUPPORTED_VERSION);
//   - KIP-848's ConsumerGroupHeartbeat and ConsumerGroupDescribe below
//     group.version 1: isConsumerGroupProtocolEnabled, the same way.
var apiGates = map[int16]Gate{
	76: {ShareVersion, 1}, // ShareGroupHeartbeat
	77: {ShareVersion, 1}, // ShareGroupDescribe
	78: {ShareVersion, 1}, // ShareFetch
	79: {ShareVersion, 1}, // ShareAcknowledge
	90: {ShareVersion, 1}, // DescribeShareGroupOffsets
	91: {ShareVersion, 1}, // AlterShareGroupOffsets
	92: {ShareVersion, 1}, // DeleteShareGroupOffsets
	68: {GroupVersion, 1}, // ConsumerGroupHeartbeat
	69: {GroupVersion, 1}, // ConsumerGroupDescribe
}

// Closed reports whether API key is off at the current levels, and the
// gate it misses.
func (s *Set) Closed(key int16) (Gate, bool) {
	g, ok := apiGates[key]
	if !ok {
		return Gate{}, false
	}
	return g, s.Level(g.Feature) < g.Level
}

// ShareGroupsOn reports whether share groups are on: share.version 1 or
// more (Kafka's ShareVersion.supportsShareGroups; the internal
// group.share.enable is not a property here).
func (s *Set) ShareGroupsOn() bool { return s.Level(ShareVersion) >= 1 }

// DeadLetters reports whether share groups' dead-letter queues are on:
// share.version 2 (KIP-1191; Kafka's ShareVersion.SV_2).
func (s *Set) DeadLetters() bool { return s.Level(ShareVersion) >= 2 }

// TransactionsV2 reports whether KIP-890's transaction rules apply:
// transaction.version 2 (Kafka's TransactionVersion.TV_2).
func (s *Set) TransactionsV2() bool { return s.Level(TransactionVersion) >= 2 }
