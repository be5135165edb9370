package broker_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
)

// initTxnID gives id a producer ID with an InitProducerId sent through
// kgo, which finds the transaction coordinator itself.
func initTxnID(ctx context.Context, t *testing.T, cl *kgo.Client, id string) int64 {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = kmsg.StringPtr(id)
	req.TransactionTimeoutMillis = 30_000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("InitProducerId %s: %v", id, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("InitProducerId %s: %v", id, err)
	}
	return resp.ProducerID
}

// TestListTransactionsPattern: list-transactions-pattern (KIP-1152), through
// kadm and raw v2 requests over kgo.
func TestListTransactionsPattern(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	ctx, cl, adm := newAdmin(t, addr)
	pids := map[string]int64{}
	for _, id := range []string{"orders-1", "orders-2", "xorders-1", "payments-1"} {
		pids[id] = initTxnID(ctx, t, cl, id)
	}

	listed := func(producerIDs []int64, pattern string) []string {
		t.Helper()
		lts, err := adm.ListTransactionsByTxPattern(ctx, producerIDs, nil, pattern)
		if err != nil {
			t.Fatalf("list %q: %v", pattern, err)
		}
		return slices.Sorted(maps.Keys(lts))
	}
	for _, tc := range []struct {
		pattern string
		want    []string
	}{
		{"orders-.*", []string{"orders-1", "orders-2"}}, // the whole ID must match: not xorders-1
		{"orders", nil}, // a prefix alone matches nothing
		{"orders-1", []string{"orders-1"}},
		{".*orders-1", []string{"orders-1", "xorders-1"}},
		{"(orders|payments)-[12]", []string{"orders-1", "orders-2", "payments-1"}},
		{"", []string{"orders-1", "orders-2", "payments-1", "xorders-1"}}, // kadm sends null
	} {
		if got := listed(nil, tc.pattern); !slices.Equal(got, tc.want) {
			t.Errorf("pattern %q: listed %v, want %v", tc.pattern, got, tc.want)
		}
	}
	if got := listed([]int64{pids["orders-2"]}, "orders-.*"); !slices.Equal(got, []string{"orders-2"}) {
		t.Errorf("pattern and producer ID filter: listed %v, want [orders-2]", got)
	}

	// An empty string on the wire is no filter either.
	req := kmsg.NewPtrListTransactionsRequest()
	req.TransactionalIDPattern = kmsg.StringPtr("")
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Version != 2 || resp.ErrorCode != 0 || len(resp.TransactionStates) != 4 {
		t.Fatalf("empty pattern: %+v, %v; want v2, all 4 IDs", resp, err)
	}

	// A pattern that does not compile answers INVALID_REGULAR_EXPRESSION
	// and nothing else, whatever the other filters say. "a)|(b" is invalid
	// on its own even though anchoring it would make it valid.
	for _, bad := range []string{"[", "(ab(cd", "a)|(b", `orders\`} {
		if _, err := adm.ListTransactionsByTxPattern(ctx, nil, nil, bad); !errors.Is(err, kerr.InvalidRegularExpression) {
			t.Errorf("kadm with pattern %q: %v, want INVALID_REGULAR_EXPRESSION", bad, err)
		}
		req := kmsg.NewPtrListTransactionsRequest()
		req.StateFilters = []string{"Empty", "Bogus"}
		req.TransactionalIDPattern = kmsg.StringPtr(bad)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != kerr.InvalidRegularExpression.Code || len(resp.TransactionStates) != 0 || len(resp.UnknownStateFilters) != 0 {
			t.Errorf("raw v2 with pattern %q: %+v, want only INVALID_REGULAR_EXPRESSION", bad, resp)
		}
	}
}
