package broker

// InitProducerId (key 22), v0-v5, for idempotent producers.
//
//   - Without a transactional ID a new producer gets a fresh producer ID at
//     epoch 0.
//   - A producer that sends its current ID and epoch (v3+, KIP-360) keeps
//     the ID and gets the epoch bumped; at the largest epoch it gets a fresh
//     ID instead.
//   - A transactional ID is answered with COORDINATOR_NOT_AVAILABLE until the
//     transaction coordinator exists, so no client believes it holds a
//     transaction we cannot complete.

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(22, 0, 5, handleInitProducerID) }

func handleInitProducerID(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.InitProducerIDRequest)
	resp := kmsg.NewPtrInitProducerIDResponse()
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		return resp, nil
	}
	if req.ProducerID >= 0 && req.ProducerEpoch >= 0 && req.ProducerEpoch < math.MaxInt16 {
		resp.ProducerID, resp.ProducerEpoch = req.ProducerID, req.ProducerEpoch+1
		return resp, nil
	}
	resp.ProducerID = b.producerIDs.Add(1) - 1
	resp.ProducerEpoch = 0
	return resp, nil
}
