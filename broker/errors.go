package broker

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/shareserve"
	"github.com/sharebroker/sharebroker/storage"
	"github.com/sharebroker/sharebroker/txn"
)

// codeFor is the only place a Go error becomes a Kafka error code. Domain
// packages return sentinels; handlers pass them through here.
func codeFor(err error) int16 {
	switch {
	case err == nil:
		return 0
	// These wrap a txn sentinel below; the code the client gets is theirs
	// (produce-txn-errors).
	case errors.Is(err, errTxnNotVerified):
		return kerr.NotEnoughReplicas.Code
	case errors.Is(err, errNotEnoughReplicas):
		return kerr.NotEnoughReplicas.Code
	case errors.Is(err, errTransactionAbortable):
		return kerr.TransactionAbortable.Code
	case errors.Is(err, storage.ErrUnknownTopic):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, storage.ErrUnknownTopicID):
		return kerr.UnknownTopicID.Code
	case errors.Is(err, storage.ErrTopicExists):
		return kerr.TopicAlreadyExists.Code
	case errors.Is(err, storage.ErrInvalidTopic):
		return kerr.InvalidTopicException.Code
	case errors.Is(err, storage.ErrInvalidPartitions):
		return kerr.InvalidPartitions.Code
	case errors.Is(err, storage.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, storage.ErrCorruptMessage):
		return kerr.CorruptMessage.Code
	case errors.Is(err, storage.ErrInvalidRecord):
		return kerr.InvalidRecord.Code
	case errors.Is(err, storage.ErrMessageTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, storage.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, storage.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, storage.ErrInvalidTxnState):
		return kerr.InvalidTxnState.Code
	case errors.Is(err, storage.ErrInvalidTimestamp):
		return kerr.InvalidTimestamp.Code
	case errors.Is(err, storage.ErrPolicyViolation):
		return kerr.PolicyViolation.Code
	case errors.Is(err, storage.ErrTopicDeletionDisabled):
		return kerr.TopicDeletionDisabled.Code
	case errors.Is(err, storage.ErrStorage):
		return kerr.KafkaStorageError.Code
	case errors.Is(err, errInvalidConfig):
		return kerr.InvalidConfig.Code
	case errors.Is(err, sharepartition.ErrInvalidRecordState):
		return kerr.InvalidRecordState.Code
	case errors.Is(err, sharepartition.ErrInvalidRequest):
		return kerr.InvalidRequest.Code
	case errors.Is(err, shareserve.ErrInvalidRequest):
		return kerr.InvalidRequest.Code
	case errors.Is(err, shareserve.ErrShareSessionNotFound):
		return kerr.ShareSessionNotFound.Code
	case errors.Is(err, shareserve.ErrInvalidShareSessionEpoch):
		return kerr.InvalidShareSessionEpoch.Code
	case errors.Is(err, shareserve.ErrShareSessionLimit):
		return kerr.ShareSessionLimitReached.Code
	case errors.Is(err, group.ErrInvalidRequest):
		return kerr.InvalidRequest.Code
	case errors.Is(err, group.ErrInvalidGroupID):
		return kerr.InvalidGroupID.Code
	case errors.Is(err, group.ErrGroupIDNotFound):
		return kerr.GroupIDNotFound.Code
	case errors.Is(err, group.ErrUnknownMemberID):
		return kerr.UnknownMemberID.Code
	case errors.Is(err, group.ErrFencedMemberEpoch):
		return kerr.FencedMemberEpoch.Code
	case errors.Is(err, group.ErrGroupMaxSizeReached):
		return kerr.GroupMaxSizeReached.Code
	case errors.Is(err, group.ErrNonEmptyGroup):
		return kerr.NonEmptyGroup.Code
	case errors.Is(err, group.ErrInconsistentGroupProtocol):
		return kerr.InconsistentGroupProtocol.Code
	case errors.Is(err, group.ErrInvalidConfig):
		return kerr.InvalidConfig.Code
	case errors.Is(err, group.ErrMemberIDRequired):
		return kerr.MemberIDRequired.Code
	case errors.Is(err, group.ErrInvalidSessionTimeout):
		return kerr.InvalidSessionTimeout.Code
	case errors.Is(err, group.ErrIllegalGeneration):
		return kerr.IllegalGeneration.Code
	case errors.Is(err, group.ErrRebalanceInProgress):
		return kerr.RebalanceInProgress.Code
	case errors.Is(err, group.ErrFencedInstanceID):
		return kerr.FencedInstanceID.Code
	case errors.Is(err, group.ErrOffsetMetadataTooLarge):
		return kerr.OffsetMetadataTooLarge.Code
	case errors.Is(err, group.ErrUnknownTopicOrPartition):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, group.ErrGroupSubscribedToTopic):
		return kerr.GroupSubscribedToTopic.Code
	case errors.Is(err, group.ErrCoordinatorNotAvailable):
		return kerr.CoordinatorNotAvailable.Code
	case errors.Is(err, group.ErrUnstableOffsetCommit):
		return kerr.UnstableOffsetCommit.Code
	case errors.Is(err, txn.ErrInvalidTimeout):
		return kerr.InvalidTransactionTimeout.Code
	case errors.Is(err, txn.ErrConcurrentTransactions):
		return kerr.ConcurrentTransactions.Code
	case errors.Is(err, txn.ErrProducerFenced):
		return kerr.ProducerFenced.Code
	case errors.Is(err, txn.ErrInvalidProducerIDMapping):
		return kerr.InvalidProducerIDMapping.Code
	case errors.Is(err, txn.ErrInvalidTxnState):
		return kerr.InvalidTxnState.Code
	case errors.Is(err, txn.ErrTransactionalIDNotFound):
		return kerr.TransactionalIDNotFound.Code
	case errors.Is(err, txn.ErrCoordinatorClosed):
		return kerr.CoordinatorNotAvailable.Code
	case errors.Is(err, group.ErrStaleMemberEpoch):
		return kerr.StaleMemberEpoch.Code
	case errors.Is(err, group.ErrUnreleasedInstanceID):
		return kerr.UnreleasedInstanceID.Code
	case errors.Is(err, group.ErrUnsupportedAssignor):
		return kerr.UnsupportedAssignor.Code
	case errors.Is(err, group.ErrInvalidRegularExpression):
		return kerr.InvalidRegularExpression.Code
	case errors.Is(err, group.ErrUnsupportedVersion):
		return kerr.UnsupportedVersion.Code
	case errors.Is(err, errInvalidRequest), errors.Is(err, acl.ErrInvalid):
		return kerr.InvalidRequest.Code
	case errors.Is(err, errClusterAuthorization):
		return kerr.ClusterAuthorizationFailed.Code
	case errors.Is(err, errTopicAuthorization):
		return kerr.TopicAuthorizationFailed.Code
	case errors.Is(err, errGroupAuthorization):
		return kerr.GroupAuthorizationFailed.Code
	case errors.Is(err, errTransactionalIDAuthorization):
		return kerr.TransactionalIDAuthorizationFailed.Code
	case errors.Is(err, errSecurityDisabled):
		return kerr.SecurityDisabled.Code
	case errors.Is(err, errInvalidReplicationFactor):
		return kerr.InvalidReplicationFactor.Code
	case errors.Is(err, errInvalidReplicaAssignment):
		return kerr.InvalidReplicaAssignment.Code
	case errors.Is(err, errMismatchedEndpointType):
		return kerr.MismatchedEndpointType.Code
	case errors.Is(err, errNotLeader):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, errNotCoordinator), errors.Is(err, group.ErrNotCoordinator):
		return kerr.NotCoordinator.Code
	}
	return kerr.UnknownServerError.Code
}

// Errors the broker itself raises while validating requests.
var (
	// errTxnNotVerified: a transactional batch could not be checked with
	// the coordinator now (its transaction is completing); retry.
	errTxnNotVerified = errors.New("cannot verify the partition is in the transaction yet")
	// errTransactionAbortable: a transactional batch for a partition not in
	// the transaction; the producer must abort.
	errTransactionAbortable = errors.New("partition is not in the transaction")
	// errNotEnoughReplicas: an acks=-1 produce to a partition whose ISR
	// is below its min.insync.replicas (docs/cluster.md min-isr).
	errNotEnoughReplicas        = errors.New("the ISR is smaller than min.insync.replicas")
	errInvalidConfig            = errors.New("invalid configuration")
	errInvalidRequest           = errors.New("invalid request")
	errInvalidReplicationFactor = errors.New("invalid replication factor")
	errInvalidReplicaAssignment = errors.New("invalid replica assignment")
	errMismatchedEndpointType   = errors.New("mismatched endpoint type")
	// The principal may not perform the operation on the CLUSTER, topic,
	// group or transactional ID (authorize.go). Their texts are Kafka's
	// messages for the codes (Errors.java), which its responses carry
	// where a message is sent.
	errClusterAuthorization         = withMessage(errors.New("cluster authorization failed"), "Cluster authorization failed.")
	errTopicAuthorization           = withMessage(errors.New("topic authorization failed"), "Topic authorization failed.")
	errGroupAuthorization           = withMessage(errors.New("group authorization failed"), "Group authorization failed.")
	errTransactionalIDAuthorization = withMessage(errors.New("transactional ID authorization failed"), "Transactional Id authorization failed.")
	// errSecurityDisabled: an ACL API without an authorizer (rule acl-off).
	errSecurityDisabled = errors.New("security disabled")
	// errNotLeader and errNotCoordinator: another node of the cluster
	// leads the partition or coordinates the key (docs/cluster.md).
	errNotLeader      = errors.New("this node is not the leader of the partition")
	errNotCoordinator = errors.New("this node is not the coordinator")
)

// txnCode is codeFor for the transactional APIs: before the version that
// knows PRODUCER_FENCED (KIP-588), a fenced producer is told
// INVALID_PRODUCER_EPOCH.
func txnCode(err error, version, fencedFrom int16) int16 {
	if version < fencedFrom && errors.Is(err, txn.ErrProducerFenced) {
		return kerr.InvalidProducerEpoch.Code
	}
	return codeFor(err)
}

// messageError is an error whose text is exactly the message Kafka gives
// with its code; errors.Is finds the sentinel that picks the code.
type messageError struct {
	sentinel error
	msg      string
}

func (e messageError) Error() string { return e.msg }
func (e messageError) Unwrap() error { return e.sentinel }

// withMessage is sentinel's code with Kafka's message msg.
func withMessage(sentinel error, msg string) error { return messageError{sentinel, msg} }

// codeOnly wraps an error Kafka answers with its code and a null message
// (a share partition refused TOPIC_AUTHORIZATION_FAILED, say), where the
// same code elsewhere carries one.
type codeOnly struct{ error }

func (e codeOnly) Unwrap() error { return e.error }

// errMessage returns a response's ErrorMessage for err: nil for success
// and for a codeOnly error.
func errMessage(err error) *string {
	if err == nil || errors.As(err, new(codeOnly)) {
		return nil
	}
	s := err.Error()
	return &s
}
