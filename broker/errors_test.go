package broker

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/internal/refusal"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/shareserve"
	"github.com/sharebroker/sharebroker/storage"
	"github.com/sharebroker/sharebroker/txn"
)

// TestCodeFor covers every sentinel codeFor maps, each wrapped as the
// handlers wrap them.
func TestCodeFor(t *testing.T) {
	tests := []struct {
		err  error
		want *kerr.Error
	}{
		{storage.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
		{storage.ErrUnknownTopicID, kerr.UnknownTopicID},
		{storage.ErrTopicExists, kerr.TopicAlreadyExists},
		{storage.ErrInvalidTopic, kerr.InvalidTopicException},
		{storage.ErrInvalidPartitions, kerr.InvalidPartitions},
		{storage.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
		{storage.ErrTopicDeletionDisabled, kerr.TopicDeletionDisabled},
		{storage.ErrStorage, kerr.KafkaStorageError},
		{errInvalidConfig, kerr.InvalidConfig},
		{errInvalidRequest, kerr.InvalidRequest},
		{errInvalidReplicationFactor, kerr.InvalidReplicationFactor},
		{errInvalidReplicaAssignment, kerr.InvalidReplicaAssignment},
		{errMismatchedEndpointType, kerr.MismatchedEndpointType},
		{errNotLeader, kerr.NotLeaderForPartition},
		{errNotCoordinator, kerr.NotCoordinator},
		{storage.ErrCorruptMessage, kerr.CorruptMessage},
		{storage.ErrInvalidRecord, kerr.InvalidRecord},
		{storage.ErrMessageTooLarge, kerr.MessageTooLarge},
		{storage.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
		{storage.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
		{storage.ErrInvalidTxnState, kerr.InvalidTxnState},
		{storage.ErrInvalidTimestamp, kerr.InvalidTimestamp},
		{storage.ErrPolicyViolation, kerr.PolicyViolation},
		{shareserve.ErrInvalidRequest, kerr.InvalidRequest},
		{shareserve.ErrShareSessionNotFound, kerr.ShareSessionNotFound},
		{shareserve.ErrInvalidShareSessionEpoch, kerr.InvalidShareSessionEpoch},
		{shareserve.ErrShareSessionLimit, kerr.ShareSessionLimitReached},
		{group.ErrUnstableOffsetCommit, kerr.UnstableOffsetCommit},
		{txn.ErrInvalidTimeout, kerr.InvalidTransactionTimeout},
		{txn.ErrConcurrentTransactions, kerr.ConcurrentTransactions},
		{txn.ErrProducerFenced, kerr.ProducerFenced},
		{txn.ErrInvalidProducerIDMapping, kerr.InvalidProducerIDMapping},
		{txn.ErrInvalidTxnState, kerr.InvalidTxnState},
		{txn.ErrTransactionalIDNotFound, kerr.TransactionalIDNotFound},
		{txn.ErrCoordinatorClosed, kerr.CoordinatorNotAvailable},
		{group.ErrInvalidRequest, kerr.InvalidRequest},
		{group.ErrInvalidGroupID, kerr.InvalidGroupID},
		{group.ErrGroupIDNotFound, kerr.GroupIDNotFound},
		{group.ErrUnknownMemberID, kerr.UnknownMemberID},
		{group.ErrFencedMemberEpoch, kerr.FencedMemberEpoch},
		{group.ErrGroupMaxSizeReached, kerr.GroupMaxSizeReached},
		{group.ErrNonEmptyGroup, kerr.NonEmptyGroup},
		{group.ErrInconsistentGroupProtocol, kerr.InconsistentGroupProtocol},
		{group.ErrInvalidConfig, kerr.InvalidConfig},
		{group.ErrMemberIDRequired, kerr.MemberIDRequired},
		{group.ErrInvalidSessionTimeout, kerr.InvalidSessionTimeout},
		{group.ErrIllegalGeneration, kerr.IllegalGeneration},
		{group.ErrRebalanceInProgress, kerr.RebalanceInProgress},
		{group.ErrFencedInstanceID, kerr.FencedInstanceID},
		{group.ErrOffsetMetadataTooLarge, kerr.OffsetMetadataTooLarge},
		{group.ErrUnknownTopicOrPartition, kerr.UnknownTopicOrPartition},
		{group.ErrGroupSubscribedToTopic, kerr.GroupSubscribedToTopic},
		{group.ErrCoordinatorNotAvailable, kerr.CoordinatorNotAvailable},
		{group.ErrStaleMemberEpoch, kerr.StaleMemberEpoch},
		{group.ErrUnreleasedInstanceID, kerr.UnreleasedInstanceID},
		{group.ErrUnsupportedAssignor, kerr.UnsupportedAssignor},
		{group.ErrUnsupportedVersion, kerr.UnsupportedVersion},
		{group.ErrInvalidRegularExpression, kerr.InvalidRegularExpression},
		{sharepartition.ErrInvalidRecordState, kerr.InvalidRecordState},
		{sharepartition.ErrInvalidRequest, kerr.InvalidRequest},
		{errClusterAuthorization, kerr.ClusterAuthorizationFailed},
		{errTopicAuthorization, kerr.TopicAuthorizationFailed},
		{codeOnly{errTopicAuthorization}, kerr.TopicAuthorizationFailed},
		{refusal.New(errTopicAuthorization, "Authorization failed."), kerr.TopicAuthorizationFailed},
		{errGroupAuthorization, kerr.GroupAuthorizationFailed},
		{errTransactionalIDAuthorization, kerr.TransactionalIDAuthorizationFailed},
		{errSecurityDisabled, kerr.SecurityDisabled},
		{acl.Validate(acl.Binding{}), kerr.InvalidRequest},
		{errors.New("anything else"), kerr.UnknownServerError},
	}
	if codeFor(nil) != 0 {
		t.Fatal("codeFor(nil) is not 0")
	}
	for _, tt := range tests {
		t.Run(tt.want.Message, func(t *testing.T) {
			if got := codeFor(fmt.Errorf("context: %w", tt.err)); got != tt.want.Code {
				t.Fatalf("codeFor(%v) = %d, want %d", tt.err, got, tt.want.Code)
			}
		})
	}
}

// Kafka's messages travel with the authorization codes, except where a
// codeOnly error asks for none.
func TestAuthorizationMessages(t *testing.T) {
	for err, want := range map[error]string{
		errTopicAuthorization:                   "Topic authorization failed.",
		errGroupAuthorization:                   "Group authorization failed.",
		errClusterAuthorization:                 "Cluster authorization failed.",
		errTransactionalIDAuthorization:         "Transactional Id authorization failed.",
		refusal.New(errTopicAuthorization, "x"): "x",
	} {
		if got := errMessage(err); got == nil || *got != want {
			t.Errorf("errMessage(%v) = %v, want %q", err, got, want)
		}
	}
	if got := errMessage(codeOnly{errTopicAuthorization}); got != nil {
		t.Errorf("codeOnly message %q, want null", *got)
	}
}
