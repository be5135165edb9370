package broker

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/auth"
	"github.com/sharebroker/sharebroker/features"
	"github.com/sharebroker/sharebroker/fetchsession"
	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/internal/refusal"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/shareserve"
	"github.com/sharebroker/sharebroker/storage"
	"github.com/sharebroker/sharebroker/telemetry"
	"github.com/sharebroker/sharebroker/txn"
)

// codeFor is the only place a Go error becomes a Kafka error code. Domain
// packages return sentinels; handlers pass them through here, and the
// codes table says which code each sentinel is.
func codeFor(err error) int16 {
	if err == nil {
		return 0
	}
	for _, c := range codes {
		if errors.Is(err, c.sentinel) {
			return c.code.Code
		}
	}
	return kerr.UnknownServerError.Code
}

// codes maps each sentinel to its Kafka code. The first row whose sentinel
// errors.Is finds in the error gives the code, so an error wrapping two
// sentinels gets the earlier row's: the produce errors first, because
// they wrap the txn sentinel whose code they replace (produce-txn-errors).
// An error no row names is UNKNOWN_SERVER_ERROR. Each Kafka code the
// broker raises itself has one sentinel of its own below; the domain
// packages' sentinels map to the same codes.
var codes = []struct {
	sentinel error
	code     *kerr.Error
}{
	{errNotEnoughReplicas, kerr.NotEnoughReplicas},
	{errTransactionAbortable, kerr.TransactionAbortable},
	{storage.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{storage.ErrUnknownTopicID, kerr.UnknownTopicID},
	{storage.ErrTopicExists, kerr.TopicAlreadyExists},
	{storage.ErrInvalidTopic, kerr.InvalidTopicException},
	{storage.ErrInvalidPartitions, kerr.InvalidPartitions},
	{storage.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{storage.ErrCorruptMessage, kerr.CorruptMessage},
	{storage.ErrInvalidRecord, kerr.InvalidRecord},
	{storage.ErrMessageTooLarge, kerr.MessageTooLarge},
	{storage.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{storage.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{storage.ErrInvalidTxnState, kerr.InvalidTxnState},
	{storage.ErrInvalidTimestamp, kerr.InvalidTimestamp},
	{storage.ErrPolicyViolation, kerr.PolicyViolation},
	{storage.ErrTopicDeletionDisabled, kerr.TopicDeletionDisabled},
	{storage.ErrStorage, kerr.KafkaStorageError},
	{errInvalidConfig, kerr.InvalidConfig},
	{sharepartition.ErrInvalidRecordState, kerr.InvalidRecordState},
	{sharepartition.ErrInvalidRequest, kerr.InvalidRequest},
	{shareserve.ErrInvalidRequest, kerr.InvalidRequest},
	{shareserve.ErrShareSessionNotFound, kerr.ShareSessionNotFound},
	{shareserve.ErrInvalidShareSessionEpoch, kerr.InvalidShareSessionEpoch},
	{shareserve.ErrShareSessionLimit, kerr.ShareSessionLimitReached},
	{fetchsession.ErrSessionNotFound, kerr.FetchSessionIDNotFound},
	{fetchsession.ErrInvalidEpoch, kerr.InvalidFetchSessionEpoch},
	{fetchsession.ErrTopicIDMismatch, kerr.FetchSessionTopicIDError},
	{group.ErrInvalidRequest, kerr.InvalidRequest},
	{group.ErrInvalidGroupID, kerr.InvalidGroupID},
	{group.ErrGroupIDNotFound, kerr.GroupIDNotFound},
	{group.ErrUnknownMemberID, kerr.UnknownMemberID},
	{group.ErrFencedMemberEpoch, kerr.FencedMemberEpoch},
	{group.ErrGroupMaxSizeReached, kerr.GroupMaxSizeReached},
	{group.ErrNonEmptyGroup, kerr.NonEmptyGroup},
	{group.ErrInconsistentGroupProtocol, kerr.InconsistentGroupProtocol},
	{group.ErrInvalidConfig, kerr.InvalidConfig},
	{telemetry.ErrInvalidRequest, kerr.InvalidRequest},
	{telemetry.ErrThrottled, kerr.ThrottlingQuotaExceeded},
	{telemetry.ErrUnknownSubscription, kerr.UnknownSubscriptionID},
	{telemetry.ErrUnsupportedCompression, kerr.UnsupportedCompressionType},
	{telemetry.ErrTooLarge, kerr.TelemetryTooLarge},
	{telemetry.ErrInvalidRecord, kerr.InvalidRecord},
	{telemetry.ErrInvalidConfig, kerr.InvalidConfig},
	{telemetry.ErrInvalidConfigRequest, kerr.InvalidRequest},
	{group.ErrMemberIDRequired, kerr.MemberIDRequired},
	{group.ErrInvalidSessionTimeout, kerr.InvalidSessionTimeout},
	{group.ErrIllegalGeneration, kerr.IllegalGeneration},
	{group.ErrRebalanceInProgress, kerr.RebalanceInProgress},
	{group.ErrFencedInstanceID, kerr.FencedInstanceID},
	{group.ErrOffsetMetadataTooLarge, kerr.OffsetMetadataTooLarge},
	{group.ErrUnknownTopicOrPartition, kerr.UnknownTopicOrPartition},
	{group.ErrGroupSubscribedToTopic, kerr.GroupSubscribedToTopic},
	{group.ErrCoordinatorNotAvailable, kerr.CoordinatorNotAvailable},
	{group.ErrUnstableOffsetCommit, kerr.UnstableOffsetCommit},
	{txn.ErrInvalidTimeout, kerr.InvalidTransactionTimeout},
	{txn.ErrConcurrentTransactions, kerr.ConcurrentTransactions},
	{txn.ErrProducerFenced, kerr.ProducerFenced},
	{txn.ErrInvalidProducerIDMapping, kerr.InvalidProducerIDMapping},
	{txn.ErrInvalidTxnState, kerr.InvalidTxnState},
	{txn.ErrTransactionalIDNotFound, kerr.TransactionalIDNotFound},
	{txn.ErrCoordinatorClosed, kerr.CoordinatorNotAvailable},
	{group.ErrStaleMemberEpoch, kerr.StaleMemberEpoch},
	{group.ErrUnreleasedInstanceID, kerr.UnreleasedInstanceID},
	{group.ErrUnsupportedAssignor, kerr.UnsupportedAssignor},
	{group.ErrInvalidRegularExpression, kerr.InvalidRegularExpression},
	{group.ErrUnsupportedVersion, kerr.UnsupportedVersion},
	{errInvalidRequest, kerr.InvalidRequest},
	{features.ErrInvalidUpdateVersion, kerr.InvalidUpdateVersion},
	{acl.ErrInvalid, kerr.InvalidRequest},
	{errClusterAuthorization, kerr.ClusterAuthorizationFailed},
	{errTopicAuthorization, kerr.TopicAuthorizationFailed},
	{errGroupAuthorization, kerr.GroupAuthorizationFailed},
	{errTransactionalIDAuthorization, kerr.TransactionalIDAuthorizationFailed},
	{errSecurityDisabled, kerr.SecurityDisabled},
	{errInvalidReplicationFactor, kerr.InvalidReplicationFactor},
	{errInvalidReplicaAssignment, kerr.InvalidReplicaAssignment},
	{errMismatchedEndpointType, kerr.MismatchedEndpointType},
	{errNotLeader, kerr.NotLeaderForPartition},
	{errNotCoordinator, kerr.NotCoordinator},
	{group.ErrNotCoordinator, kerr.NotCoordinator},
	{auth.ErrDuplicateUser, kerr.DuplicateResource},
	{auth.ErrNoCredential, kerr.ResourceNotFound},
	{auth.ErrUnacceptableCredential, kerr.UnacceptableCredential},
	{auth.ErrUnsupportedMechanism, kerr.UnsupportedSaslMechanism},
}

// Errors the broker itself raises while validating requests.
var (
	// errTxnNotVerified: a transactional batch could not be checked with
	// the coordinator now (its transaction is completing); retry. It is
	// NOT_ENOUGH_REPLICAS, with a text of its own that Produce sends as
	// the partition's message (produceErrMessage).
	errTxnNotVerified = refusal.New(errNotEnoughReplicas, "cannot verify the partition is in the transaction yet")
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
	errClusterAuthorization         = refusal.New(errors.New("cluster authorization failed"), "Cluster authorization failed.")
	errTopicAuthorization           = refusal.New(errors.New("topic authorization failed"), "Topic authorization failed.")
	errGroupAuthorization           = refusal.New(errors.New("group authorization failed"), "Group authorization failed.")
	errTransactionalIDAuthorization = refusal.New(errors.New("transactional ID authorization failed"), "Transactional Id authorization failed.")
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
