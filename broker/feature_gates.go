package broker

// Behaviour the finalized feature levels gate (docs/features.md,
// features-gate-live), read at each request so that UpdateFeatures takes
// effect with the next one: share groups below share.version 1 and KIP-848
// consumer groups below group.version 1 answer UNSUPPORTED_VERSION as
// Kafka's KafkaApis does (features-api-gate); dead letters need
// share.version 2 (share_dead_letters.go) and KIP-890's transactions
// transaction.version 2 (txn_markers.go).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/wire"
)

// gateClosed answers r with UNSUPPORTED_VERSION in every error field, as
// the request's getErrorResponse does, when the levels turn its API off;
// ok is false when the handler should run.
func (b *Broker) gateClosed(r *request) (resp kmsg.Response, ok bool) {
	if _, closed := b.features.Closed(r.header.APIKey); !closed {
		return nil, false
	}
	resp = wire.ErrorResponse(r.body, kerr.UnsupportedVersion.Code)
	// What Kafka's answer leaves out or adds (features-gate-answer):
	// ShareFetchRequest.getErrorResponse and ShareAcknowledgeRequest's
	// carry the top-level code alone, no topics; the Alter and Delete
	// share-group offsets requests' add Errors.message() and no topics;
	// handleDescribeShareGroupOffsetsRequest answers each group with its
	// code and no topics.
	switch resp := resp.(type) {
	case *kmsg.ShareFetchResponse:
		resp.Topics = nil
	case *kmsg.ShareAcknowledgeResponse:
		resp.Topics = nil
	case *kmsg.AlterShareGroupOffsetsResponse:
		resp.Topics, resp.ErrorMessage = nil, kmsg.StringPtr(kerr.UnsupportedVersion.Description)
	case *kmsg.DeleteShareGroupOffsetsResponse:
		resp.Topics, resp.ErrorMessage = nil, kmsg.StringPtr(kerr.UnsupportedVersion.Description)
	case *kmsg.DescribeShareGroupOffsetsResponse:
		for i := range resp.Groups {
			resp.Groups[i].Topics = nil
		}
	}
	return resp, true
}
