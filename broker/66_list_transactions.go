package broker

// ListTransactions (key 66), v0-v1.
//
//   - Lists every transactional ID with its producer ID and state, filtered
//     by state names and producer IDs when given (list-transactions).
//     State names we do not know are echoed in UnknownStateFilters.
//   - v1 DurationFilterMillis >= 0 keeps only transactions running longer
//     than that, as Kafka's TransactionStateManager.listTransactionStates
//     does; an ID with no transaction started counts as running forever,
//     as its start timestamp is -1 there too.
//   - v2 (a transactional ID pattern) is not served.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/txn"
)

func init() { register(66, 0, 1, handleListTransactions) }

// txnStateNames are the states Kafka accepts as filters.
var txnStateNames = []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

func handleListTransactions(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	for _, s := range req.StateFilters {
		if !slices.Contains(txnStateNames, s) {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
		}
	}
	durationMs := int64(-1)
	if req.Version >= 1 {
		durationMs = req.DurationFilterMillis
	}
	nowMs := b.clock.Now().UnixMilli()
	for _, d := range b.txns.List() {
		if !listTxnMatches(d, req.StateFilters, req.ProducerIDFilters, durationMs, nowMs) {
			continue
		}
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = d.TransactionalID, d.ProducerID, d.State.String()
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}

func listTxnMatches(d txn.Description, states []string, producerIDs []int64, durationMs, nowMs int64) bool {
	if len(states) > 0 && !slices.Contains(states, d.State.String()) {
		return false
	}
	if len(producerIDs) > 0 && !slices.Contains(producerIDs, d.ProducerID) {
		return false
	}
	if durationMs >= 0 && !d.Started.IsZero() && nowMs-d.Started.UnixMilli() <= durationMs {
		return false
	}
	return true
}
