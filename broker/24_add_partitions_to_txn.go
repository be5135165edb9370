package broker

// AddPartitionsToTxn (key 24), v0-v3: the client versions.
//
//   - Adds the partitions to the transactional ID's transaction, starting
//     it if needed (add-partitions). When any partition does not exist it
//     answers UNKNOWN_TOPIC_OR_PARTITION for those and
//     OPERATION_NOT_ATTEMPTED for the others, and adds none.
//   - A producer ID that is not the ID's is INVALID_PRODUCER_ID_MAPPING; an
//     old epoch PRODUCER_FENCED (v2+; INVALID_PRODUCER_EPOCH before, as
//     KIP-588 has it); a transaction completing CONCURRENT_TRANSACTIONS.
//     Such an error is answered for every partition.
//   - v4+ batches transactions for brokers verifying on behalf of producers
//     (KIP-890); a single node never sends it, so it is not served.
//   - Authorization (docs/security.md api-authorization): WRITE on the
//     transactional ID (else every partition
//     TRANSACTIONAL_ID_AUTHORIZATION_FAILED), WRITE on each topic (else
//     TOPIC_AUTHORIZATION_FAILED, the others OPERATION_NOT_ATTEMPTED).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/cluster"

	"github.com/sharebroker/sharebroker/txn"
)

func init() { register(24, 0, 3, handleAddPartitionsToTxn) }

func handleAddPartitionsToTxn(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)

	// WRITE on the transactional ID, else every partition answers
	// TRANSACTIONAL_ID_AUTHORIZATION_FAILED; then WRITE on each topic,
	// whose refusal answers TOPIC_AUTHORIZATION_FAILED, the others
	// OPERATION_NOT_ATTEMPTED, as KafkaApis.handleAddPartitionsToTxnRequest.
	txnDenied := !r.authorized(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID)
	var parts []txn.TopicPartition
	missing := make(map[txn.TopicPartition]bool)
	denied := make(map[string]bool)
	for _, rt := range req.Topics {
		if !txnDenied && b.authz != nil && !denied[rt.Topic] && !r.authorized(acl.OpWrite, acl.ResourceTopic, rt.Topic) {
			denied[rt.Topic] = true
		}
		t := b.store.Topic(rt.Topic)
		for _, p := range rt.Partitions {
			tp := txn.TopicPartition{Topic: rt.Topic, Partition: p}
			if t == nil || t.Partition(p) == nil {
				missing[tp] = true
			}
			parts = append(parts, tp)
		}
	}
	// With a refused topic nothing is added (the others answer
	// OPERATION_NOT_ATTEMPTED, unknown partitions still say so).
	code := kerr.OperationNotAttempted.Code
	if txnDenied {
		code = kerr.TransactionalIDAuthorizationFailed.Code
		clear(missing)
	} else if err := b.notCoordinator(r.conn, cluster.Transaction, req.TransactionalID); err != nil && len(denied) == 0 {
		code = codeFor(err)
		clear(missing) // every partition answers NOT_COORDINATOR, as Kafka's coordinator check comes first
	} else if len(missing) == 0 && len(denied) == 0 {
		code = txnCode(b.txns.AddPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, parts), req.Version, 2)
	}
	for _, rt := range req.Topics {
		st := kmsg.NewAddPartitionsToTxnResponseTopic()
		st.Topic = rt.Topic
		for _, p := range rt.Partitions {
			sp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			sp.Partition, sp.ErrorCode = p, code
			if missing[txn.TopicPartition{Topic: rt.Topic, Partition: p}] {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			if denied[rt.Topic] {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
