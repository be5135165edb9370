package conformance_test

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
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
