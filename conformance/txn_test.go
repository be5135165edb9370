package conformance_test

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/internal/batchtest"
)

// Transactions rule list-transactions-pattern (KIP-1152): ListTransactions
// v2's TransactionalIDPattern must match a whole transactional ID, as
// Kafka's Matcher.matches does; "xorders-1" merely contains a match.
func listTransactionsPattern(e *env) {
	for _, id := range []string{"orders-1", "xorders-1"} {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = kmsg.StringPtr(id)
		req.TransactionTimeoutMillis = 60_000
		resp, err := req.RequestWith(e.ctx, e.cl)
		if err != nil {
			e.t.Fatalf("InitProducerId %s: %v", id, err)
		}
		e.note("init "+id, codeName(resp.ErrorCode))
	}
	req := kmsg.NewPtrListTransactionsRequest()
	req.Version = 2
	req.TransactionalIDPattern = kmsg.StringPtr("orders-.*")
	resp, err := req.RequestWith(e.ctx, e.cl)
	if err != nil {
		e.t.Fatalf("ListTransactions: %v", err)
	}
	var ids []string
	for _, st := range resp.TransactionStates {
		ids = append(ids, st.TransactionalID)
	}
	slices.Sort(ids)
	e.note("pattern orders-.*", codeName(resp.ErrorCode)+" ["+strings.Join(ids, " ")+"]")
}

// Transactions rules produce-implicit-add and end-txn-bump (KIP-890 part
// 2, transaction.version 2, which both peers finalize): a Produce v12
// joins the transaction by itself; EndTxn v5 answers a raised epoch, its
// retry the same; with nothing ongoing an abort raises the epoch again and
// a commit is refused. Epochs are noted relative to InitProducerId's.
func endTxnV5(e *env) {
	e.createTopic("a", 1)
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID = kmsg.StringPtr("c5")
	init.TransactionTimeoutMillis = 60_000
	ir, err := init.RequestWith(e.ctx, e.cl)
	if err != nil {
		e.t.Fatalf("InitProducerId: %v", err)
	}
	pid, e0 := ir.ProducerID, ir.ProducerEpoch

	// kgo sends the highest version both sides serve (13, topics by ID);
	// every version from 12 adds the partition.
	produce := kmsg.NewPtrProduceRequest()
	produce.TransactionID = kmsg.StringPtr("c5")
	produce.Acks, produce.TimeoutMillis = -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic, pt.TopicID = "a", e.topicID("a")
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = batchtest.Transactional(pid, e0, 0, 1).Build()
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	pr, err := produce.RequestWith(e.ctx, e.cl)
	if err != nil {
		e.t.Fatalf("Produce: %v", err)
	}
	e.note("produce v12+, partition not added", codeName(pr.Topics[0].Partitions[0].ErrorCode))

	end := func(what string, epoch int16, commit bool) {
		req := kmsg.NewPtrEndTxnRequest()
		req.SetVersion(5)
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = "c5", pid, epoch, commit
		resp, err := req.RequestWith(e.ctx, e.cl)
		if err != nil {
			e.t.Fatalf("EndTxn %s: %v", what, err)
		}
		answer := codeName(resp.ErrorCode)
		if resp.ErrorCode == 0 {
			answer += fmt.Sprintf(" epoch +%d", resp.ProducerEpoch-e0)
		}
		e.note(what, answer)
	}
	end("commit", e0, true)
	end("commit retried", e0, true)
	end("commit, nothing ongoing", e0+1, true)
	end("abort, nothing ongoing", e0+1, false)
}
