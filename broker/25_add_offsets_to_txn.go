package broker

// AddOffsetsToTxn (key 25), v0-v4.
//
//   - Adds the group's offsets to the transactional ID's transaction,
//     starting it if needed, so TxnOffsetCommit for the group may follow
//     (add-offsets). Errors as AddPartitionsToTxn: INVALID_PRODUCER_ID_MAPPING,
//     PRODUCER_FENCED (v2+; INVALID_PRODUCER_EPOCH before),
//     CONCURRENT_TRANSACTIONS.
//   - An empty group ID is INVALID_GROUP_ID.
//   - Authorization (docs/security.md api-authorization): WRITE on the
//     transactional ID, then READ on the group; else TRANSACTIONAL_ID_ or
//     GROUP_AUTHORIZATION_FAILED.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/cluster"
)

func init() { register(25, 0, 4, handleAddOffsetsToTxn) }

func handleAddOffsetsToTxn(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	switch {
	case !r.authorized(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	case !r.authorized(acl.OpRead, acl.ResourceGroup, req.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp, nil
	}
	err := b.notCoordinator(r.conn, cluster.Transaction, req.TransactionalID)
	if err == nil {
		err = b.txns.AddGroup(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group)
	}
	resp.ErrorCode = txnCode(err, req.Version, 2)
	return resp, nil
}
