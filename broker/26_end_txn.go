package broker

// EndTxn (key 26), v0-v5.
//
//   - Commits or aborts the transactional ID's transaction: a COMMIT or
//     ABORT marker into every partition added, then the groups' pending
//     offsets applied or dropped, all before the answer (end-txn).
//   - No transaction ongoing is INVALID_TXN_STATE, except a repeat of the
//     decision just completed (a client retry), which succeeds.
//   - INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED (v2+; INVALID_PRODUCER_EPOCH
//     before), CONCURRENT_TRANSACTIONS as for AddPartitionsToTxn.
//   - v5 under transaction.version 2 (KIP-890 part 2) raises the epoch with
//     every commit or abort and answers the producer ID and epoch to go on
//     with; its retry is recognised by the epoch below, and an abort with
//     nothing ongoing is allowed (end-txn-bump). Below level 2, v5 follows
//     the rules above and answers the unchanged producer ID and epoch.
//   - Authorization (docs/security.md api-authorization): WRITE on the
//     transactional ID, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/cluster"
)

func init() { register(26, 0, 5, handleEndTxn) }

func handleEndTxn(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	bump := req.Version >= 5 && b.txnVersion2()
	pid, epoch, err := int64(-1), int16(-1), b.notCoordinator(r.conn, cluster.Transaction, req.TransactionalID)
	if !r.authorized(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID) {
		err = errTransactionalIDAuthorization
	}
	if err == nil {
		pid, epoch, err = b.txns.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, bump)
	}
	resp.ErrorCode = txnCode(err, req.Version, 2)
	resp.ProducerID, resp.ProducerEpoch = pid, epoch
	return resp, nil
}
