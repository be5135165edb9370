package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
)

// TestTxnVersionsTV1Only: tv1-only. ApiVersions, asked through kgo,
// finalizes no transaction.version and stops each transactional API below
// the versions of KIP-890 part 2 and broker-to-broker verification
// (docs/transactions.md, "Which versions are served").
func TestTxnVersionsTV1Only(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	ctx, cl, _ := newAdmin(t, addr)
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "transaction.version" {
			t.Errorf("finalized feature %+v; want no transaction.version", f)
		}
	}
	for _, f := range resp.SupportedFeatures {
		if f.Name == "transaction.version" {
			t.Errorf("supported feature %+v; want no transaction.version", f)
		}
	}
	want := map[int16]int16{
		int16(kmsg.AddPartitionsToTxn): 3,
		int16(kmsg.AddOffsetsToTxn):    4,
		int16(kmsg.EndTxn):             4,
		int16(kmsg.TxnOffsetCommit):    4,
		int16(kmsg.ListTransactions):   2,
	}
	for _, k := range resp.ApiKeys {
		if top, ok := want[k.ApiKey]; ok {
			if k.MaxVersion != top {
				t.Errorf("%s advertised up to v%d, want v%d", kmsg.NameForKey(k.ApiKey), k.MaxVersion, top)
			}
			delete(want, k.ApiKey)
		}
	}
	for k := range want {
		t.Errorf("%s not advertised", kmsg.NameForKey(k))
	}
}
