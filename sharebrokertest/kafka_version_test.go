package sharebrokertest_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/sharebrokertest"
)

// WithKafkaVersion makes the broker the release named
// (kafka-version-apis): under 4.1, ShareFetch tops out at v1 and
// share.version is not finalized.
func TestWithKafkaVersion(t *testing.T) {
	b := sharebrokertest.Start(t, sharebrokertest.WithKafkaVersion("4.1"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == 78 && k.MaxVersion != 1 {
			t.Errorf("ShareFetch v%d-v%d under 4.1, want up to v1", k.MinVersion, k.MaxVersion)
		}
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "share.version" {
			t.Errorf("share.version finalized at %d under 4.1, want none", f.MaxVersionLevel)
		}
	}
}
