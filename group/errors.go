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
