package broker

// ListTransactions (key 66), v0-v2.
//
//   - Lists every transactional ID with its producer ID and state, filtered
//     by state names and producer IDs when given (list-transactions).
//     State names we do not know are echoed in UnknownStateFilters.
//   - v1 DurationFilterMillis >= 0 keeps only transactions running longer
//     than that, as Kafka's TransactionStateManager.listTransactionStates
//     does; an ID with no transaction started counts as running forever,
//     as its start timestamp is -1 there too.
//   - v2 TransactionalIDPattern (KIP-1152) keeps only the IDs the regular
//     expression matches from first to last character
//     (list-transactions-pattern). Kafka compiles it with RE2/J, whose
//     syntax Go's regexp shares; null or empty means no filter. A pattern
//     that does not compile answers INVALID_REGULAR_EXPRESSION and nothing
//     else.
//   - Authorization (docs/security.md api-authorization): only transactional
//     IDs the principal may DESCRIBE are listed.

import (
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/cluster"

	"github.com/sharebroker/sharebroker/txn"
)

func init() { register(66, 0, 2, handleListTransactions) }

// txnStateNames are the states Kafka accepts as filters.
var txnStateNames = []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

func handleListTransactions(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	var pattern *regexp.Regexp
	if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		var ok bool
		if pattern, ok = wholeMatch(*req.TransactionalIDPattern); !ok {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp, nil
		}
	}
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
		if pattern != nil && !pattern.MatchString(d.TransactionalID) {
			continue
		}
		if !b.coordinates(r.conn, cluster.Transaction, d.TransactionalID) {
			continue // another node lists it
		}
		// Only transactional IDs the principal may describe are listed.
		if !r.authorized(acl.OpDescribe, acl.ResourceTransactionalID, d.TransactionalID) {
			continue
		}
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = d.TransactionalID, d.ProducerID, d.State.String()
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}

// wholeMatch compiles expr so that it must match a whole string, as Java's
// Matcher.matches does, not just a part of it. The expression is checked on
// its own first: wrapping it could turn an invalid one such as "a)|(b"
// into a valid one.
func wholeMatch(expr string) (*regexp.Regexp, bool) {
	if _, err := regexp.Compile(expr); err != nil {
		return nil, false
	}
	re, err := regexp.Compile(`^(?:` + expr + `)$`)
	return re, err == nil
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
