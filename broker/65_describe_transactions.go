package broker

// DescribeTransactions (key 65), v0.
//
//   - Each transactional ID is answered with its state, producer ID and
//     epoch, timeout, the start time of its ongoing transaction (-1 if
//     none) and its partitions by topic (describe-transactions).
//   - An unknown ID answers TRANSACTIONAL_ID_NOT_FOUND.
//   - Authorization (docs/security.md api-authorization): DESCRIBE on each
//     transactional ID (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED); topics
//     the principal may not DESCRIBE are left out.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/cluster"
	"github.com/sharebroker/sharebroker/txn"
)

func init() { register(65, 0, 0, handleDescribeTransactions) }

func handleDescribeTransactions(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		err := b.notCoordinator(r.conn, cluster.Transaction, id)
		if !r.authorized(acl.OpDescribe, acl.ResourceTransactionalID, id) {
			err = errTransactionalIDAuthorization
		}
		var d txn.Description
		if err == nil {
			d, err = b.txns.Describe(id)
		}
		if err != nil {
			st.ErrorCode = codeFor(err)
			st.ProducerID, st.ProducerEpoch, st.StartTimestamp = -1, -1, -1
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		st.State = d.State.String()
		st.TimeoutMillis = int32(d.Timeout.Milliseconds())
		st.StartTimestamp = -1
		if !d.Started.IsZero() {
			st.StartTimestamp = d.Started.UnixMilli()
		}
		st.ProducerID, st.ProducerEpoch = d.ProducerID, d.Epoch
		for _, tp := range d.Partitions {
			// Only topics the principal may describe are listed.
			if !r.authorized(acl.OpDescribe, acl.ResourceTopic, tp.Topic) {
				continue
			}
			if n := len(st.Topics); n == 0 || st.Topics[n-1].Topic != tp.Topic {
				t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				t.Topic = tp.Topic
				st.Topics = append(st.Topics, t)
			}
			last := &st.Topics[len(st.Topics)-1]
			last.Partitions = append(last.Partitions, tp.Partition)
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
