package group

import "errors"

// Sentinel errors. The broker maps each to one Kafka error code; the
// returned errors wrap them with a message fit for ErrorMessage.
var (
	// ErrInvalidRequest: malformed heartbeat fields (INVALID_REQUEST).
	ErrInvalidRequest = errors.New("invalid request")
	// ErrInvalidGroupID: empty group ID where one is required (INVALID_GROUP_ID).
	ErrInvalidGroupID = errors.New("invalid group id")
	// ErrGroupIDNotFound: no such group, or the ID belongs to another group
	// type (GROUP_ID_NOT_FOUND).
	ErrGroupIDNotFound = errors.New("group id not found")
	// ErrUnknownMemberID: the member is not in the group (UNKNOWN_MEMBER_ID).
	ErrUnknownMemberID = errors.New("unknown member id")
	// ErrFencedMemberEpoch: the member's epoch is neither current nor
	// previous (FENCED_MEMBER_EPOCH).
	ErrFencedMemberEpoch = errors.New("fenced member epoch")
	// ErrGroupMaxSizeReached: a new member would exceed group.share.max.size
	// (GROUP_MAX_SIZE_REACHED).
	ErrGroupMaxSizeReached = errors.New("group max size reached")
	// ErrNonEmptyGroup: the group still has members (NON_EMPTY_GROUP).
	ErrNonEmptyGroup = errors.New("group is not empty")
	// ErrInconsistentGroupProtocol: a classic JoinGroup on a share group ID
	// (INCONSISTENT_GROUP_PROTOCOL).
	ErrInconsistentGroupProtocol = errors.New("inconsistent group protocol")
	// ErrInvalidConfig: unknown group config name or bad value
	// (INVALID_CONFIG).
	ErrInvalidConfig = errors.New("invalid config")
)

// Sentinel errors of classic groups and committed offsets.
var (
	// ErrMemberIDRequired: JoinGroup v4+ with an empty member ID; the
	// result carries the member ID to join with (MEMBER_ID_REQUIRED).
	ErrMemberIDRequired = errors.New("member id required")
	// ErrInvalidSessionTimeout: the session timeout is outside the broker's
	// bounds (INVALID_SESSION_TIMEOUT).
	ErrInvalidSessionTimeout = errors.New("invalid session timeout")
	// ErrIllegalGeneration: the request's generation is not the group's
	// (ILLEGAL_GENERATION).
	ErrIllegalGeneration = errors.New("illegal generation")
	// ErrRebalanceInProgress: the group is rebalancing; rejoin
	// (REBALANCE_IN_PROGRESS).
	ErrRebalanceInProgress = errors.New("rebalance in progress")
	// ErrFencedInstanceID: the group instance ID now belongs to another
	// member ID (FENCED_INSTANCE_ID).
	ErrFencedInstanceID = errors.New("fenced instance id")
	// ErrOffsetMetadataTooLarge: commit metadata longer than
	// offset.metadata.max.bytes (OFFSET_METADATA_TOO_LARGE).
	ErrOffsetMetadataTooLarge = errors.New("offset metadata too large")
	// ErrUnknownTopicOrPartition: a commit or offset delete names a topic
	// or partition that does not exist (UNKNOWN_TOPIC_OR_PARTITION).
	ErrUnknownTopicOrPartition = errors.New("unknown topic or partition")
	// ErrGroupSubscribedToTopic: OffsetDelete on a topic the group
	// consumes (GROUP_SUBSCRIBED_TO_TOPIC).
	ErrGroupSubscribedToTopic = errors.New("group subscribed to topic")
	// ErrCoordinatorNotAvailable: the coordinator is shutting down
	// (COORDINATOR_NOT_AVAILABLE).
	ErrCoordinatorNotAvailable = errors.New("coordinator not available")
)

// Sentinel errors of KIP-848 consumer groups.
var (
	// ErrStaleMemberEpoch: an offset commit or fetch carries an older
	// member epoch than the member's (STALE_MEMBER_EPOCH).
	ErrStaleMemberEpoch = errors.New("stale member epoch")
	// ErrUnreleasedInstanceID: a static member joins with an instance ID
	// another live member holds (UNRELEASED_INSTANCE_ID).
	ErrUnreleasedInstanceID = errors.New("unreleased instance id")
	// ErrUnsupportedAssignor: ServerAssignor names no assignor the broker
	// has (UNSUPPORTED_ASSIGNOR).
	ErrUnsupportedAssignor = errors.New("unsupported assignor")
	// ErrInvalidRegularExpression: SubscribedTopicRegex does not compile
	// (INVALID_REGULAR_EXPRESSION).
	ErrInvalidRegularExpression = errors.New("invalid regular expression")
	// ErrUnsupportedVersion: a consumer-protocol member commits with an
	// OffsetCommit version below 9 (UNSUPPORTED_VERSION).
	ErrUnsupportedVersion = errors.New("unsupported version")
)
