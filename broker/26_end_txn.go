package broker

// EndTxn (key 26), v0-v4.
//
//   - Commits or aborts the transactional ID's transaction: a COMMIT or
//     ABORT marker into every partition added, then the groups' pending
//     offsets applied or dropped, all before the answer (end-txn).
//   - No transaction ongoing is INVALID_TXN_STATE, except a repeat of the
//     decision just completed (a client retry), which succeeds.
//   - INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED (v2+; INVALID_PRODUCER_EPOCH
//     before), CONCURRENT_TRANSACTIONS as for AddPartitionsToTxn.
//   - v5 returns a new epoch per transaction (transaction.version 2,
//     KIP-890 part 2); we do not advertise it (tv1-only).

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(26, 0, 4, handleEndTxn) }

func handleEndTxn(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	err := b.txns.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
	resp.ErrorCode = txnCode(err, req.Version, 2)
	return resp, nil
}
