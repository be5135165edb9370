package broker

// InitProducerId (key 22), v0-v5.
//
//   - Without a transactional ID every request gets a fresh producer ID at
//     epoch 0, even one that sends its current ID and epoch (v3+): Kafka's
//     TransactionCoordinator.handleInitProducerId does the same, because an
//     idempotent producer bumps its epoch itself (KIP-360) and only asks
//     for a new ID when it must start over. A client under test thus sees
//     the same IDs and epochs it would see against Kafka.
//   - With a transactional ID the transaction coordinator answers
//     (docs/transactions.md): the ID's producer ID with a new epoch, an open
//     transaction aborted first (init-transactional); a timeout above
//     transaction.max.timeout.ms is INVALID_TRANSACTION_TIMEOUT
//     (init-timeout); a transaction completing is CONCURRENT_TRANSACTIONS
//     (init-concurrent); an exhausted epoch moves to a new producer ID
//     (epoch-exhausted). v3+ naming a producer ID and epoch that are not
//     the current ones is PRODUCER_FENCED (v4+) or INVALID_PRODUCER_EPOCH.
//   - Authorization (docs/security.md api-authorization): WRITE on the
//     transactional ID (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED); without
//     one, IDEMPOTENT_WRITE on CLUSTER or WRITE on some topic (else
//     CLUSTER_AUTHORIZATION_FAILED).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/cluster"
)

func init() { register(22, 0, 5, handleInitProducerID) }

// initProducerIDAuthorized checks what KafkaApis.handleInitProducerIdRequest
// does: WRITE on the transactional ID (and TWO_PHASE_COMMIT on it when v6+
// asks for 2PC, which we do not serve); without one, IDEMPOTENT_WRITE on
// CLUSTER (asked quietly) or WRITE on at least one topic (rule
// by-resource-type).
func (r *request) initProducerIDAuthorized(req *kmsg.InitProducerIDRequest) bool {
	a := r.conn.b.authz
	if a == nil {
		return true
	}
	if req.TransactionalID != nil {
		return r.authorized(acl.OpWrite, acl.ResourceTransactionalID, *req.TransactionalID)
	}
	if r.authorizedQuietly(acl.OpIdempotentWrite, acl.ResourceCluster, acl.ClusterName) ||
		a.AuthorizeAny(r.conn.principal, r.conn.clientIP(), acl.OpWrite, acl.ResourceTopic) {
		return true
	}
	r.conn.b.metrics.Denied(acl.ResourceCluster, r.conn.nodeLabel())
	return false
}

func handleInitProducerID(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.InitProducerIDRequest)
	resp := kmsg.NewPtrInitProducerIDResponse()
	if !r.initProducerIDAuthorized(req) {
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		if req.TransactionalID == nil {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		}
		return resp, nil
	}
	if req.TransactionalID != nil {
		if err := b.notCoordinator(r.conn, cluster.Transaction, *req.TransactionalID); err != nil {
			resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = -1, -1, codeFor(err)
			return resp, nil
		}
		producerID, epoch := int64(-1), int16(-1)
		if req.Version >= 3 {
			producerID, epoch = req.ProducerID, req.ProducerEpoch
		}
		timeout := time.Duration(req.TransactionTimeoutMillis) * time.Millisecond
		pid, e, err := b.txns.InitProducerID(*req.TransactionalID, timeout, producerID, epoch)
		resp.ProducerID, resp.ProducerEpoch = pid, e
		resp.ErrorCode = txnCode(err, req.Version, 4)
		return resp, nil
	}
	resp.ProducerID = b.newProducerID()
	resp.ProducerEpoch = 0
	return resp, nil
}
