package broker

// InitProducerId (key 22), v0-v5, for idempotent producers.
//
//   - Without a transactional ID every request gets a fresh producer ID at
//     epoch 0, even one that sends its current ID and epoch (v3+): Kafka's
//     TransactionCoordinator.handleInitProducerId does the same, because an
//     idempotent producer bumps its epoch itself (KIP-360) and only asks
//     for a new ID when it must start over. A client under test thus sees
//     the same IDs and epochs it would see against Kafka.
//   - A transactional ID is answered with COORDINATOR_NOT_AVAILABLE until the
//     transaction coordinator exists, so no client believes it holds a
//     transaction we cannot complete.

import (
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
	resp.ProducerID = b.producerIDs.Add(1) - 1
	resp.ProducerEpoch = 0
	return resp, nil
}
