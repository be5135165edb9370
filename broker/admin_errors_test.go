package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sharebroker/sharebroker/storage"
)

// TestCodeForAdminErrors covers the sentinels the admin APIs return, each
// wrapped as the handlers wrap them.
func TestCodeForAdminErrors(t *testing.T) {
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
		{errInvalidConfig, kerr.InvalidConfig},
		{errInvalidRequest, kerr.InvalidRequest},
		{errInvalidReplicationFactor, kerr.InvalidReplicationFactor},
		{errInvalidReplicaAssignment, kerr.InvalidReplicaAssignment},
		{errMismatchedEndpointType, kerr.MismatchedEndpointType},
	}
	for _, tt := range tests {
		t.Run(tt.want.Message, func(t *testing.T) {
			if got := codeFor(fmt.Errorf("context: %w", tt.err)); got != tt.want.Code {
				t.Fatalf("codeFor(%v) = %d, want %d", tt.err, got, tt.want.Code)
			}
		})
	}
}
